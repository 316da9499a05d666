//! Runs the PodSet operator against the cluster of the current kubeconfig (apply `crd.yaml`
//! first): `cargo run --release -p tidemark-example-podset`. Stops on Ctrl-C.

use anyhow::Context as _;
use tidemark_actors::Manager;
use tidemark_actors::builder::with_runtimes;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let registration = tidemark_example_podset::registration()?;
    with_runtimes(|io| async move {
        let client = io
            .spawn(kube::Client::try_default())
            .await?
            .context("a client from the kubeconfig")?;
        let manager = Manager::builder()
            .controller(registration)
            .start(client, &io)?;
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl-C")?;
        manager.stop();
        anyhow::Ok(())
    })
    .context("the I/O runtime")?
}
