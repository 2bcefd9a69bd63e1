"""Read and write .env files."""

from envfile.parser import parse, parse_line
from envfile.writer import dump, format_line

__all__ = ["dump", "format_line", "parse", "parse_line"]
