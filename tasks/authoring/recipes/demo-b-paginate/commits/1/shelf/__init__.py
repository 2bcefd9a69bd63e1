"""shelf: a tiny book catalog."""
