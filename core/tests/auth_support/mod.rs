//! Fixtures shared by the authentication and protocol-log tests: a dummy credential key, cards,
//! credential files, a plain request to authenticate and a request as the log sees it.
#![allow(dead_code)]

use a2at_core::a2a::HttpMethod;
use a2at_core::a2a::card::AgentCard;
use a2at_core::auth::{CredentialKey, CredentialsConfig};
use a2at_core::io::{Correlation, OpPurpose};
use a2at_core::{HttpRequest, OpId};
use serde_json::Value;

pub const KEY_HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
pub const IV: [u8; 12] = [7; 12];

pub fn key() -> CredentialKey {
    CredentialKey::from_hex(KEY_HEX).unwrap()
}

pub fn card(v: Value) -> AgentCard {
    AgentCard::from_json_value(&v).unwrap()
}

pub fn creds(v: Value) -> CredentialsConfig {
    CredentialsConfig::from_json_value(&v, Some(&key())).unwrap()
}

/// A JSON-RPC send to `url` with the usual headers and no authentication yet.
pub fn request_to(url: &str) -> HttpRequest {
    HttpRequest {
        op: OpId(1),
        agent: "a".into(),
        purpose: OpPurpose::Send,
        method: HttpMethod::Post,
        url: url.into(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Accept".into(), "application/json".into()),
        ],
        body: b"{}".to_vec(),
        streaming: false,
        http2: false,
        correlation: Default::default(),
    }
}

/// A send of `body` with `headers`, from agent `agentA`, numbered `op`, with every correlation
/// field set: what the protocol log is given.
pub fn logged_request(op: u64, headers: &[(&str, &str)], body: &str) -> HttpRequest {
    let mut r = request_to("https://agent.example/rpc");
    r.op = OpId(op);
    r.agent = "agentA".into();
    r.headers = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned().into(), (*v).to_owned().into()))
        .collect();
    r.body = body.as_bytes().to_vec();
    r.correlation = std::sync::Arc::new(Correlation {
        execution_id: "exec-1".into(),
        step: "step-1".into(),
        subtask_index: 2,
        logical_task_id: "ltask-9".into(),
        context_id: "ctx-3".into(),
        remote_task_id: Some("rtask-4".into()),
    });
    r
}
