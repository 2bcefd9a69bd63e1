"""Skycast API client."""
