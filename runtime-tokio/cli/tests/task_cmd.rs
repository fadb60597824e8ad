//! `a2at task get|list|cancel|watch` against scripted agents on loopback, on both bindings.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use a2at_tests::loopback::LoopbackServer;
use a2at_tests::{Plan, ScriptedAgent};
use a2at_tokio::{ControlPointBuilder, Engine, MessageContent, parse_and_validate};
use serde_json::{Value, json};

fn run_cli(args: Vec<String>) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(args)
        .output()
        .expect("a2at runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn cli(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || run_cli(args))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_commands_get_list_cancel_and_watch() {
    let server = LoopbackServer::start(vec![
        ScriptedAgent::new("rpc").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ScriptedAgent::new("rest")
            .rest()
            .by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
    ])
    .await;
    let dir = std::env::temp_dir().join(format!("a2at-task-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _cleanup = RemoveOnDrop(dir.clone());
    let cards_file = dir.join("cards.json");
    let cards: Vec<Value> = server.cards().iter().map(|c| c.to_json()).collect();
    std::fs::write(&cards_file, Value::Array(cards).to_string()).unwrap();
    let cards_arg = cards_file.display().to_string();

    // Runs whose tasks stay WORKING at the agents (they poll rarely).
    let engine = Engine::builder(server.cards())
        .poll_interval(Duration::from_secs(60))
        .build()
        .unwrap();
    let host = Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    );
    let mut runs = Vec::new();
    for agent in ["rpc", "rest"] {
        let wf = parse_and_validate(
            &json!({"steps": [{"name": "s", "subtasks": [{"agent": agent, "description": "x"}]}]})
                .to_string(),
        )
        .unwrap();
        runs.push(engine.run(wf, host.clone()).spawn());
    }
    let mut ids = Vec::new();
    for agent in ["rpc", "rest"] {
        let mut id = None;
        for _ in 0..500 {
            id = server
                .agent(agent)
                .open_tasks()
                .into_iter()
                .next()
                .map(|t| t.0);
            if id.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        ids.push(id.expect("an open task"));
    }

    let base = |cmd: &str, agent: &str| -> Vec<String> {
        vec![
            "task".into(),
            cmd.into(),
            "--cards".into(),
            cards_arg.clone(),
            "--agent".into(),
            agent.into(),
        ]
    };
    for (agent, id) in ["rpc", "rest"].into_iter().zip(&ids) {
        let mut args = base("get", agent);
        args.extend(["--task-id".into(), id.clone()]);
        let (code, out, err) = cli(args).await;
        assert_eq!(code, 0, "{err}");
        let task: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(task["id"], json!(id));
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");

        let mut args = base("list", agent);
        args.extend([
            "--status".into(),
            "working".into(),
            "--page-size".into(),
            "1".into(),
        ]);
        let (code, out, err) = cli(args).await;
        assert_eq!(code, 0, "{err}");
        let page: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(page["tasks"][0]["id"], json!(id));
        assert_eq!(page["nextPageToken"], Value::Null);

        // The stream stays open while the task is WORKING: read what it printed, then stop it.
        let mut args = base("watch", agent);
        args.extend(["--task-id".into(), id.clone()]);
        let watch = Command::new(env!("CARGO_BIN_EXE_a2at"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("a2at runs");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut watch = watch;
        watch.kill().unwrap();
        let watched = watch.wait_with_output().unwrap();
        let first = String::from_utf8_lossy(&watched.stdout)
            .lines()
            .next()
            .map(str::to_owned)
            .expect("watch printed an event");
        let event: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(event["task"]["id"], json!(id));
        let mut args = base("cancel", agent);
        args.extend(["--task-id".into(), id.clone()]);
        let (code, out, err) = cli(args).await;
        assert_eq!(code, 0, "{err}");
        let task: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED");
        let mut args = base("cancel", agent);
        args.extend(["--task-id".into(), id.clone()]);
        let (code, _, err) = cli(args).await;
        assert_eq!(code, 1);
        assert!(err.contains("a2a.task_not_cancelable"), "{err}");
    }

    let mut args = base("list", "rpc");
    args.extend(["--status".into(), "sleeping".into()]);
    let (code, _, err) = cli(args).await;
    assert_eq!(code, 2, "{err}");
    let mut args = base("list", "rpc");
    args.extend(["--all".into(), "--page-size".into(), "1".into()]);
    let (code, out, err) = cli(args).await;
    assert_eq!(code, 0, "{err}");
    let all: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(all["tasks"].as_array().unwrap().len(), 1);
    let (code, _, err) = cli(base("get", "nobody")
        .into_iter()
        .chain(["--task-id".to_owned(), "t".to_owned()])
        .collect())
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("workflow.agent_not_found"), "{err}");
    for run in &runs {
        run.cancel();
    }
}

/// Removes the scratch directory however the test ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
