"""Small-business invoices."""
