"""What the public site knows and answers from: the content pack, its search, the weather and ask."""
