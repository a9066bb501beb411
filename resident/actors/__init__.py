"""One module per actor kind; actors talk only by messages through stable addresses."""
