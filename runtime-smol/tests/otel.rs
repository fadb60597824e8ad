//! The shared OTLP export suite on the smol runtime (spawned tasks carry the
//! subscriber with the export layer).

use tracing_subscriber::layer::SubscriberExt;

a2at_tests::smol_test_runtime!(OnSmol);

fn export(endpoint: &str, headers: &[(&str, &str)]) -> (tracing::Dispatch, Box<dyn Fn()>) {
    let mut config = a2at_smol::otel::OtlpConfig::new(endpoint).service_name("a2at-test");
    for (n, v) in headers {
        config = config.header(*n, *v);
    }
    let (layer, guard) = a2at_smol::otel::layer(config).expect("the export is set up");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    (
        dispatch,
        // Flushes on each call; dropping it shuts the export down.
        Box::new(move || guard.flush().expect("flushed")),
    )
}

a2at_tests::otel_suite!(OnSmol, export);
