"""Game records in: the pydantic models (the authority), the fast msgspec decoder, and the sources that read files, folders and standard input."""
