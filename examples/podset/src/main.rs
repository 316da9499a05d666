//! Runs the PodSet operator against the cluster of the current kubeconfig (apply `crd.yaml`
//! first): `cargo run --release -p tidemark-example-podset`. Stops on Ctrl-C.

use anyhow::Context as _;
use tidemark_actors::Manager;
use tidemark_actors::manager::io_runtime;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let io = io_runtime().context("the I/O runtime")?;
    let client = io
        .block_on(kube::Client::try_default())
        .context("a client from the kubeconfig")?;
    let registration = tidemark_example_podset::registration()?;
    let handle = io.handle().clone();
    actix::System::new().block_on(async move {
        let manager = Manager::builder()
            .controller(registration)
            .start(client, &handle)?;
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl-C")?;
        manager.stop();
        anyhow::Ok(())
    })?;
    io.shutdown_timeout(std::time::Duration::from_secs(5));
    Ok(())
}
