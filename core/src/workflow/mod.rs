//! Workflow model, strict parsing of the orchestration-center JSON, and graph validation.
