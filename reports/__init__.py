"""Reports: tables and summaries of campaign databases."""
