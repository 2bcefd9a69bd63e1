"""Parcel tracking."""
