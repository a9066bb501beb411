"""Member sessions: starting one (`start`), ending and recovering it (`end`), reading and curating them (`reads`),
importing a harness's history (`history`), and carrying them in a member's export (`portability`); with the
projection into the working directory (`tree`) and the transcripts on disk (`transcripts`). See docs/sessions.md.
"""
