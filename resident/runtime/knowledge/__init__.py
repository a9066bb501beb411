"""The knowledge capability's services: banks and pages, ingest through the gate, verified entries and their
evidence, the authorized probe and context preparation."""
