"""Read and write .env files."""

from envfile.files import load, save
from envfile.interpolate import expand
from envfile.parser import parse, parse_line
from envfile.writer import dump, format_line

__all__ = ["dump", "expand", "format_line", "load", "parse", "parse_line", "save"]
