//! A2A protocol v1.0 client types and codecs: ProtoJSON types, JSON-RPC and HTTP+JSON bindings, SSE, error envelopes, AgentCards.
