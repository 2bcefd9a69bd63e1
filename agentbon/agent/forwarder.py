"""The command agent's forwarder: runs inside the sandbox, stdlib only, with any ``python3`` (passed with ``-c``).

``python3 -c <this> SOCKET COMMAND``: listens on 127.0.0.1 (a free port; the sandbox's own loopback, brought up
where a fresh network namespace left it down), starts ``bash -c COMMAND`` with ``OPENAI_BASE_URL`` pointing there,
relays every connection to the rollout's model proxy on the Unix socket ``SOCKET``, and exits with the program's
exit status. When the proxy is gone (a limit was reached) the next connection stops the program. Its own failure
is exit status 125 with a line starting ``agentbon-forwarder: failed:``. Not imported by agentbon: its source is. Written for old interpreters too (no f-strings, type comments), as
``sandbox/resident_child.py``.
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading

FAILED = 125
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def say(text):
    # type: (str) -> None
    sys.stderr.write("agentbon-forwarder: " + text + "\n")
    sys.stderr.flush()


def loopback_up():
    # type: () -> None
    """Bring ``lo`` up where this process may (a fresh network namespace has it down); else leave it."""
    try:
        import fcntl

        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0))[:18])[1]
            if not flags & IFF_UP:
                fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
        finally:
            s.close()
    except (OSError, ImportError):
        pass


def pump(src, dst):
    # type: (socket.socket, socket.socket) -> None
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class Forwarder:
    def __init__(self, path, command):
        # type: (str, str) -> None
        self.path, self.command = path, command
        self.proc = None  # type: subprocess.Popen | None
        self.stopping = threading.Event()

    def stop(self, why):
        # type: (str) -> None
        """Stop the program (its whole session): TERM, then KILL after 5 s."""
        if self.stopping.is_set() or self.proc is None:
            return
        self.stopping.set()
        say(why)
        for sig, delay in ((signal.SIGTERM, 0.0), (signal.SIGKILL, 5.0)):
            threading.Timer(delay, self.kill, (sig,)).start()

    def kill(self, sig):
        # type: (int) -> None
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass

    def killed(self, *_):
        # type: (object) -> None
        """Stopped from outside (the exec's timeout): the program goes too."""
        self.kill(signal.SIGKILL)
        os._exit(124)

    def serve(self, listener):
        # type: (socket.socket) -> None
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(self.path)
            except OSError:
                conn.close()
                up.close()
                self.stop("the model proxy is closed (a limit was reached): stopping the program")
                continue
            threading.Thread(target=pump, args=(conn, up), daemon=True).start()
            threading.Thread(target=pump, args=(up, conn), daemon=True).start()

    def run(self):
        # type: () -> int
        loopback_up()
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            probe = socket.create_connection(listener.getsockname(), timeout=5)
            probe.close()
            listener.accept()[0].close()
        except OSError as e:
            say("failed: no loopback to listen on in the sandbox: " + str(e))
            return FAILED
        base = "http://127.0.0.1:" + str(listener.getsockname()[1]) + "/v1"
        env = dict(os.environ, OPENAI_BASE_URL=base, OPENAI_API_BASE=base)
        try:
            self.proc = subprocess.Popen(["bash", "-c", self.command], env=env, start_new_session=True)
        except OSError as e:
            say("failed: cannot start bash: " + str(e))
            return FAILED
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self.killed)
        threading.Thread(target=self.serve, args=(listener,), daemon=True).start()
        code = self.proc.wait()
        self.kill(signal.SIGKILL)  # what the program left running in its session
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(Forwarder(sys.argv[1], sys.argv[2]).run())
