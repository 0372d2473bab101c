//! `lllm batch --queue` and `lllm worker`: a batch on NATS JetStream.

use std::time::Duration;

use anyhow::anyhow;
use lllm_runtime::batch::BatchOutput;
use lllm_runtime::queue::{
    collect, enqueue, run_worker, Attempts, Collected, InFlight, TacticSha, WorkerPlan,
};
use lllm_runtime::{load_tactic, Engine, TacticRegistry};

use crate::cli::{BatchArgs, WorkerArgs};
use crate::exit::{failed, run_failure, usage, Failure};

/// The SHA-256 of the tactic file's bytes, as journals record it.
fn tactic_sha(path: &std::path::Path) -> Result<TacticSha, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        usage(anyhow::Error::new(e).context(format!("cannot read {}", path.display())))
    })?;
    Ok(TacticSha::of(&bytes))
}

/// Enqueues the items the output does not answer yet, then writes their results as they arrive.
#[allow(clippy::print_stderr)]
pub(crate) fn batch(args: BatchArgs) -> Result<(), Failure> {
    let Some(address) = args.queue.clone() else {
        return Err(usage(anyhow!("--queue is required here")));
    };
    let crate::batch::Start {
        spec,
        vars,
        mut items,
    } = crate::batch::start(&args)?;
    let sha = tactic_sha(spec.path())?;
    let (answered, rounds) = BatchOutput::results(&args.output).map_err(usage)?;
    let skipped = items.iter().filter(|i| answered.contains(&i.id)).count();
    items.retain(|i| !answered.contains(&i.id));
    let attempts = Attempts::new(sha, &items, &rounds, &vars);
    let output = BatchOutput::open(&args.output).map_err(usage)?;
    let host = crate::execute::host()?;
    let bar = crate::batch::progress_bar(attempts.len() as u64);
    let collected = host.block_on(async {
        let enqueued = enqueue(&address, &attempts)
            .await
            .map_err(failed)?;
        bar.suspend(|| {
            eprintln!(
                "lllm: batch on {address}: {} item(s) enqueued, {} already on the queue, {skipped} answered before; waiting for results",
                enqueued.added, enqueued.already
            );
        });
        let shown = |c: Collected| {
            bar.set_position((c.answered + c.failed) as u64);
            bar.set_message(format!("done {} failed {}", c.answered, c.failed));
        };
        collect(&address, &attempts, &output, &shown)
            .await
            .map_err(failed)
    });
    bar.finish_and_clear();
    let collected = collected?;
    eprintln!(
        "lllm: batch: {} answered, {} failed, {skipped} skipped (answered before)",
        collected.answered, collected.failed
    );
    match collected.failed {
        0 => Ok(()),
        n => Err(failed(anyhow!(
            "{n} item(s) failed; their errors are in {}; run the same command again to retry them",
            args.output.display()
        ))),
    }
}

/// Runs items off the queue until stopped by a signal.
#[allow(clippy::print_stderr)]
pub(crate) fn worker(args: WorkerArgs, registry: &TacticRegistry) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    crate::redact::remember_tactic(&spec);
    let sha = tactic_sha(spec.path())?;
    // Its own folder, never one found at a predictable name: another local user could have
    // planted a folder or link there to read or steer the journals.
    let journals = crate::private_dir::fresh("lllm-worker").map_err(|e| {
        failed(anyhow::Error::new(e).context("cannot make a folder for the items' journals"))
    })?;
    let plan = WorkerPlan {
        concurrency: usize::from(args.concurrency),
        class: args.priority_class.into(),
        journals: journals.clone(),
        ack_wait: Duration::from_secs(u64::from(args.ack_wait)),
        in_flight: InFlight::default(),
    };
    let host = crate::execute::host()?;
    // On SIGTERM or Ctrl-C the runs stop (nothing new is sent); the items in flight go back to the
    // queue at once, for another worker to resume from their journals.
    let in_flight = plan.in_flight.clone();
    let folder = journals.clone();
    crate::signals::on_stop(move || {
        // The runs halt; the worker hands its items back as it ends: wait for that, then exit.
        match in_flight.wait_handed_back(Duration::from_secs(10)) {
            Some(0) => {}
            Some(n) => eprintln!("lllm: worker: handed {n} item(s) in flight back to the queue"),
            None => {
                eprintln!("lllm: worker: the items in flight go back to the queue after --ack-wait")
            }
        }
        // Their journals are in JetStream.
        std::fs::remove_dir_all(&folder).ok();
    });
    let engine = Engine::new(registry.clone());
    eprintln!(
        "lllm: worker on {}: tactic {} (SHA-256 {}), {} at a time",
        args.queue,
        args.tactic.display(),
        &sha.as_str()[..12],
        plan.concurrency
    );
    let report = host.block_on(async {
        let tactic = engine.prepare(spec).await.map_err(run_failure)?;
        let report = run_worker(&engine, &tactic, &sha, &args.queue, &plan, &|| false).await;
        tactic.shutdown().await;
        report.map_err(failed)
    });
    std::fs::remove_dir_all(&journals).ok();
    let report = report?;
    eprintln!(
        "lllm: worker: {} answered, {} failed, {} refused, {} handed back",
        report.answered, report.failed, report.refused, report.handed_back
    );
    Ok(())
}
