"""toolhall: the tool layer for LLM agents."""
