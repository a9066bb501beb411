"""Cognition's pure rules: one scale for hits of every source (`fusion`), the bridge's settings and bank mapping
(`settings`), its circuit breaker on the injectable clock (`breaker`), and what a bridged service's answer to
"what do you offer" means for the runtime (`offer`). No I/O here: the runtime's services do that
(`resident.runtime.cognition`)."""
