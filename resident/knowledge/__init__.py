"""Knowledge: the pure rules of knowledge banks, the ingest gate, verified entries and their evidence.

Pages enter a bank only through ingest (`pages`, `gate`); verified entries move through a lifecycle
(`lifecycle`) whose one way to `verified` is the acceptance gate over execution records
(`evidence`); who may see what is decided in one place (`visibility`). The one I/O adapter here is
the derived keyword index of pages (`search_index`).
"""
