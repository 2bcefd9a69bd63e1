"""Build invoices from CSV exported by the till: description,quantity,unit_price[,category]."""
import csv
import io

from .invoice import Invoice


def invoice_from_csv(number: str, text: str) -> Invoice:
    """Read lines from CSV text (with a header row); errors name the CSV line."""
    invoice = Invoice(number)
    reader = csv.DictReader(io.StringIO(text.strip()))
    for row in reader:
        where = f"CSV line {reader.line_num}"
        try:
            quantity = int(row["quantity"])
            category = (row.get("category") or "standard").strip()
            invoice.add(row["description"].strip(), quantity, row["unit_price"], category)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: missing column {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return invoice
