"""The home as a whole: its status and backup, a member's export and import, and maintenance of a closed home
(restore, doctor, salvage)."""
