"""Hindsight memory: pure recall core (text, embeddings, keyword, vectors, fusion) and its embedders."""
