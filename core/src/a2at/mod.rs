//! A2A-T conventions: extension URIs, metadata keys and the Negotiation-T context.
