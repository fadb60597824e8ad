//! `a2at encrypt-credential` output used by `a2at run --credentials`, with the key from the
//! environment or a `.env` file, failing closed without it.

use a2at_core::a2a::AgentCard;
use a2at_tests::ScriptedAgent;
use a2at_tests::loopback::LoopbackServer;
use serde_json::{Value, json};

/// The cards of `server` with `alpha` requiring the given schemes.
fn secured(server: &LoopbackServer, schemes: Value, requirements: Value) -> Vec<AgentCard> {
    server
        .cards()
        .into_iter()
        .map(|card| {
            if card.name != "alpha" {
                return card;
            }
            let mut v = card.to_json();
            v["securitySchemes"] = schemes.clone();
            v["securityRequirements"] = requirements.clone();
            AgentCard::from_json_value(&v).unwrap()
        })
        .collect()
}

fn bearer() -> (Value, Value) {
    (
        json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
        json!([{"schemes": {"bearer": {}}}]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_encrypts_a_credential_that_run_then_uses() {
    let key_hex = "0f".repeat(32);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(["encrypt-credential", "cli-token-9", "--key", &key_hex])
        .output()
        .unwrap();
    assert!(out.status.success());
    let enc = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(
        enc.starts_with("enc:") && !enc.contains("cli-token-9"),
        "{enc}"
    );

    let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
    let (schemes, reqs) = bearer();
    let cards: Vec<Value> = secured(&server, schemes, reqs)
        .iter()
        .map(|c| c.to_json())
        .collect();
    let scratch = tempfile::Builder::new()
        .prefix("a2at-cli-auth-")
        .tempdir()
        .unwrap();
    let dir = scratch.path();
    let files = [
        ("cards.json", Value::Array(cards)),
        ("creds.json", json!({"alpha": {"bearer": {"token": enc}}})),
        (
            "wf.json",
            json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]}),
        ),
        (
            "host.json",
            json!({"content": {"default": {"parts": [{"text": "{description}"}]}}}),
        ),
    ];
    for (name, v) in &files {
        std::fs::write(dir.join(name), v.to_string()).unwrap();
    }
    let p = |n: &str| dir.join(n).display().to_string();
    let args = [
        "run",
        "--workflow",
        &p("wf.json"),
        "--cards",
        &p("cards.json"),
        "--host",
        &p("host.json"),
        "--credentials",
        &p("creds.json"),
    ]
    .map(str::to_owned);
    let key = key_hex.clone();
    let run_args = args.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_a2at"))
            .args(&run_args)
            .env("A2AT_CRED_KEY", key)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        server.requests_to("alpha", "SendMessage")[0].header("Authorization"),
        Some("Bearer cli-token-9")
    );

    // The key from a .env file given with --env-file (AU-13), and without it: fail closed.
    std::fs::write(
        dir.join(".env"),
        format!("# key\nA2AT_CRED_KEY=\"{key_hex}\"\n"),
    )
    .unwrap();
    let mut with_env = args.to_vec();
    with_env.extend(["--env-file".to_owned(), p(".env")]);
    let (ok, failed) = tokio::task::spawn_blocking(move || {
        let run = |a: &[String]| {
            std::process::Command::new(env!("CARGO_BIN_EXE_a2at"))
                .args(a)
                .env_remove("A2AT_CRED_KEY")
                .output()
                .unwrap()
        };
        (run(&with_env), run(&args))
    })
    .await
    .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        failed.status.code(),
        Some(2),
        "no key: the credentials cannot be read"
    );
    assert!(String::from_utf8_lossy(&failed.stderr).contains("credential"));
    assert_eq!(server.requests_to("alpha", "SendMessage").len(), 2);
}
