//! The runtime behaviour suites, written once and compiled per runtime: each function is
//! generic over a [`TestRuntime`](crate::runtime::TestRuntime), and each suite's macro turns
//! them into `#[test]`s for one runtime (see [`crate::runtime`]). A new test is a `pub fn` in a
//! suite module plus its name in the suite's macro.

// Each public function is one test whose name says what it checks; the suite macros list them.
#![allow(missing_docs)]

pub mod auth;
pub mod cards;
pub mod close;
pub mod engine_api;
pub mod extension;
pub mod http_runs;
pub mod interop;
pub mod journal;
pub mod lifecycle;
pub mod metrics;
pub mod otel;
pub mod protocol_log;
pub mod proxy;
pub mod security;
pub mod tasks;
pub mod telemetry;

/// One `#[test]` per listed suite function, each calling it on `$rt`.
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_tests {
    ($rt:ty, $module:ident, [$($(#[$attr:meta])* $test:ident,)*]) => {
        $(
            #[test]
            $(#[$attr])*
            fn $test() {
                $crate::suites::$module::$test::<$rt>();
            }
        )*
    };
}

/// Instantiates the extension suite (Authorization-T and Notification-T through the extension sender) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! extension_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            extension,
            [
                the_agent_ending_the_stream_completes_the_subscription,
                a_terminal_state_mid_subscription_keeps_it_open,
                ack_timeout_fails_the_acknowledgement_and_closes_the_stream,
                closing_before_the_ack_fails_it_and_the_listener_may_close_at_once,
                a_dropped_connection_reattaches_with_subscribe_to_task,
                reattachment_gives_up_after_the_configured_attempts,
                a_non_streaming_agent_answers_once_and_that_is_the_whole_stream,
                preconditions_fail_before_any_request,
                an_expired_authorization_cancels_its_remote_task,
                a_slow_listener_delays_neither_other_subscriptions_nor_a_workflow,
                failing_extensions_leave_a_concurrent_workflow_unchanged,
                ack_then_notifications_then_host_close,
                authorization_success_failure_rejection_and_polling,
                an_overloaded_agent_gets_the_authorization_again,
            ]
        );
    };
}

/// Instantiates the cards suite (adding, replacing and removing cards on a live engine, unusable
/// cards reported per card) on a [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! cards_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            cards,
            [
                a_card_added_to_a_live_engine_serves_new_runs,
                a_replaced_card_reaches_new_runs_while_a_started_run_keeps_the_old_one,
                a_removed_card_fails_new_runs_typed_and_leaves_the_others_alone,
                an_engine_with_unusable_cards_builds_and_refuses_only_the_runs_that_need_them,
                set_cards_reports_each_unusable_card_and_refuses_a_repeated_name,
                json_cards_are_normalised_and_a_broken_one_names_its_agent,
                card_changes_racing_run_starts_never_break_a_run,
            ]
        );
    };
}

/// Instantiates the http runs suite (workflows over loopback HTTP on every binding) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! http_runs_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            http_runs,
            [
                fan_out_and_routing_complete_over_jsonrpc_unary,
                fan_out_and_routing_complete_over_jsonrpc_streaming,
                fan_out_and_routing_complete_over_rest_unary,
                fan_out_and_routing_complete_over_rest_streaming,
                fan_out_and_routing_complete_over_grpc_unary,
                fan_out_and_routing_complete_over_grpc_streaming,
            ]
        );
    };
}

/// Instantiates the interop suite (interop with agents written with the official Python SDK (ignored unless `tests/run` set them up)) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! interop_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            interop,
            [
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_blocking_agent_completes_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_python_agent_receives_a_traceparent_of_the_run_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_streaming_agent_delivers_assembled_artifact_chunks_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                an_input_required_negotiation_round_trip_completes_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_failed_task_keeps_its_evidence,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_rejected_call_projects_the_error_envelope_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                cancelling_midway_cancels_the_remote_task_on_every_binding,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_multi_step_workflow_with_fan_out_and_routing_runs_against_python_agents,
                #[ignore = "needs the Python interop peers: run tests/run"]
                an_answer_in_the_final_status_message_is_the_output_blocking_and_streaming,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_stream_reset_by_the_network_after_the_task_is_known_still_succeeds,
                #[ignore = "needs the Python interop peers: run tests/run"]
                agents_offering_only_grpc_run_without_a_preference,
                #[ignore = "needs the Python interop peers: run tests/run"]
                grpc_stream_events_arrive_as_their_frames_do,
                #[ignore = "needs the Python interop peers: run tests/run"]
                task_passthroughs_get_list_subscribe_and_cancel_python_tasks_on_both_bindings,
                #[ignore = "needs the Python interop peers: run tests/run"]
                a_plain_input_required_is_answered_by_the_host_on_both_bindings,
            ]
        );
    };
}

/// Instantiates the security suite (discovery over HTTP, login deadlines, TLS against a loopback TLS server, `.env` files and credential sources, the protocol log knobs) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! security_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            security,
            [
                registry_fetches_all_by_name_and_registers,
                registry_errors_are_typed,
                redirects_are_followed_and_bounded,
                psop_load_and_search_send_the_token_and_parse_the_answers,
                access_tokens_never_reach_the_logs_or_the_errors,
                an_oversized_answer_is_a_typed_error_not_a_memory_sink,
                a_center_that_never_answers_hits_the_configured_deadline,
                tls_verification_extra_ca_and_the_insecure_mode,
                grpc_over_tls_negotiates_h2_under_the_same_tls_policy,
                a_hanging_login_hits_its_deadline_and_nothing_is_sent_unauthenticated,
                credentials_come_from_a_file_or_inline_never_both_with_the_key_from_a_dotenv,
                protocol_log_knobs_come_from_the_env_file_and_the_builder_wins,
                tls_client_identity_files_and_revocation_lists,
                planted_secrets_in_logins_and_credential_files_never_reach_the_logs,
            ]
        );
    };
}

/// Instantiates the engine api suite (concurrency limits, many concurrent runs, `send_task`, transport failures, card and TLS validation, event selection) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! engine_api_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            engine_api,
            [
                in_flight_exchanges_never_exceed_the_limits_across_runs,
                an_agent_added_to_a_live_engine_gets_the_same_per_agent_limit,
                two_hundred_concurrent_runs_share_one_engine,
                send_task_runs_one_task_without_a_workflow,
                transport_failures_become_no_response,
                invalid_cards_and_settings_are_typed_errors,
                a_tls_policy_that_cannot_be_built_is_an_error_never_a_fallback,
                events_are_built_only_when_someone_can_see_them,
                zero_or_negative_settings_are_refused_at_the_door_naming_the_field,
                a_host_may_keep_its_task_requests_and_every_result_is_named_all_the_same,
            ]
        );
    };
}

/// Instantiates the lifecycle suite (event order, cancellation, panicking callbacks, `on_finish`, budgets) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! lifecycle_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            lifecycle,
            [
                events_stream_in_lifecycle_order_with_close_last,
                cancelling_through_the_handle_cancels_every_remote_task,
                dropping_the_execute_future_cancels_and_cleans_up_in_the_background,
                the_execute_future_starts_the_run_when_first_polled,
                a_panicking_on_task_fails_that_task_and_the_process_survives,
                a_failing_or_panicking_on_finish_never_changes_the_result,
                unimplemented_callbacks_fail_explicitly,
                a_callback_that_outlives_its_budget_is_dropped,
                the_event_hook_keeps_replaces_expands_or_drops_and_survives_a_panic,
                a_full_event_queue_pauses_the_run_until_the_consumer_reads,
                progress_is_a_consistent_snapshot_taken_while_the_run_goes_on,
                a_plain_input_required_is_declined_by_default_or_answered_by_the_host,
                follow_ups_on_input_required_stop_at_the_limit,
                a_host_that_answers_at_once_still_lets_its_run_be_watched_and_cancelled,
            ]
        );
    };
}

/// Instantiates the auth suite (built-in credentials at the transport: static tokens, API keys, logins with a cached token, merging with the host's hook, never sending unauthenticated) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! auth_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            auth,
            [
                a_card_that_requires_auth_is_never_called_without_credentials,
                a_static_encrypted_token_is_sent_as_a_bearer_header,
                an_api_key_in_the_query_is_added_to_the_url,
                a_query_credential_is_masked_in_the_protocol_log,
                a_conflicting_header_from_the_hook_blocks_the_send,
                a_login_token_is_fetched_once_and_reused_by_concurrent_runs,
                a_replaced_card_with_another_auth_plan_never_reuses_the_old_token,
                the_extension_sender_built_from_an_engine_uses_its_credentials,
                a_credentials_file_fails_closed_without_the_key_and_loads_with_it,
            ]
        );
    };
}

/// Instantiates the protocol log suite (the protocol log at the real transport boundary never shows a planted secret) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! protocol_log_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            protocol_log,
            [planted_secrets_never_reach_the_protocol_log,]
        );
    };
}

/// Instantiates the tasks suite (task passthroughs on the engine: get, list with paging and
/// filters, cancel, subscribe, typed errors, on both bindings) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! tasks_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            tasks,
            [
                get_and_cancel_a_task_on_both_bindings,
                list_tasks_pages_with_next_page_token_and_filters,
                subscribe_to_task_streams_typed_events_until_the_agent_ends_it,
                closing_a_subscription_drops_the_stream_and_sends_nothing,
                task_call_errors_are_typed,
            ]
        );
    };
}

/// Instantiates the close suite (`Engine::close`: drain or cancel, `CancelTask` for abandoned
/// tasks, subscriptions closed, nothing new after the close, dropping the engine) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! close_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            close,
            [
                draining_lets_runs_finish_then_nothing_new_starts,
                a_drain_deadline_cancels_what_is_left_and_cancels_its_remote_tasks,
                cancel_mode_cancels_at_once_and_closes_every_subscription,
                dropping_the_engine_cancels_its_runs_without_waiting,
                the_conversation_hook_runs_once_per_context_after_its_whole_cycle,
                a_close_never_waits_for_an_event_consumer_that_stopped_reading,
            ]
        );
    };
}

/// Instantiates the proxy suite (workflows through a real loopback `CONNECT` proxy, `NO_PROXY`,
/// proxy authentication, the request hook) on a [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! proxy_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            proxy,
            [
                a_workflow_runs_through_a_connect_proxy,
                sse_streams_arrive_intact_through_the_proxy,
                rest_streaming_runs_through_the_proxy,
                grpc_over_http2_runs_through_the_proxy,
                tls_runs_inside_the_tunnel_verified_against_the_agent,
                no_proxy_bypasses_the_proxy,
                proxy_authentication_is_required_and_the_password_never_shows,
                a_dead_proxy_is_a_connect_failure_naming_it,
                client_settings_next_to_a_given_client_are_an_error,
                the_pool_follows_the_in_flight_bound_unless_given,
                the_request_hook_adds_gateway_headers_the_agent_receives,
                the_request_hook_rewrites_uris_for_a_streaming_run,
                a_failing_or_panicking_hook_fails_the_exchange_not_the_engine,
                extension_senders_from_the_engine_share_its_proxy_and_hook,
                discovery_goes_through_the_proxy_and_the_hook,
                grpc_over_tls_negotiates_h2_inside_the_tunnel,
            ]
        );
    };
}

/// Instantiates the journal suite (durable runs: write-ahead journal, resume, damaged journals)
/// on a [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! journal_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            journal,
            [
                a_journaled_run_ends_as_an_unjournaled_one,
                a_journaled_run_records_a_trace_that_replays,
                a_journal_commits_only_before_something_is_carried_out,
                a_run_stopped_at_any_append_resumes_to_the_same_result,
                a_run_stopped_mid_negotiation_resumes_without_asking_a_round_twice,
                a_truncated_or_garbled_journal_is_a_typed_error_naming_the_line,
                a_killed_engine_process_resumes_to_the_same_result,
                time_spent_down_counts_against_the_task_budget,
            ]
        );
    };
}

/// Instantiates the telemetry suite (the span tree of a run, the W3C traceparent the agents
/// receive, a host parent, no secret in any span) on a
/// [`TestRuntime`](crate::runtime::TestRuntime).
#[macro_export]
macro_rules! telemetry_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            telemetry,
            [
                a_two_step_run_gives_a_span_tree_down_to_each_exchange,
                a_host_traceparent_joins_the_run_to_the_host_trace,
                a_malformed_host_traceparent_refuses_the_run_naming_it,
                a_failed_attempt_is_its_own_exchange_span_marked_as_an_error,
                planted_secrets_never_reach_spans_or_events,
            ]
        );
    };
}

/// Instantiates the metrics suite (what a run counts through the `metrics` facade) on a
/// [`TestRuntime`](crate::runtime::TestRuntime). It installs a process-global recorder: give it
/// a test binary of its own.
#[macro_export]
macro_rules! metrics_suite {
    ($rt:ty) => {
        $crate::__suite_tests!(
            $rt,
            metrics,
            [a_run_counts_runs_subtasks_requests_retries_reattaches_and_rounds,]
        );
    };
}

/// Instantiates the OTLP export suite on a [`TestRuntime`](crate::runtime::TestRuntime), with
/// `$export` (a [`suites::otel::Export`](crate::suites::otel::Export)) building the runtime
/// adapter's `otel` layer. The test binary needs the adapter's `otel` feature.
#[macro_export]
macro_rules! otel_suite {
    ($rt:ty, $export:path) => {
        #[test]
        fn an_exported_run_has_the_span_tree_and_the_ids_the_agents_received() {
            $crate::suites::otel::an_exported_run_has_the_span_tree_and_the_ids_the_agents_received::<$rt>($export);
        }

        #[test]
        fn a_run_joining_a_host_trace_is_exported_under_the_host_span() {
            $crate::suites::otel::a_run_joining_a_host_trace_is_exported_under_the_host_span::<$rt>($export);
        }
    };
}
