//! Fixtures shared by the authentication tests: a dummy credential key, cards, credential
//! files and a plain request to authenticate.
#![allow(dead_code)]

use a2at_core::a2a::HttpMethod;
use a2at_core::a2a::card::AgentCard;
use a2at_core::auth::{CredentialKey, CredentialsConfig};
use a2at_core::io::OpPurpose;
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
