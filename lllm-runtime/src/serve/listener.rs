//! The accept loop: axum's router on hyper's HTTP/1 server, with a header-read timeout (hyper's
//! timer, which `axum::serve` leaves unset) and a cap on connections, so that slow or idle clients
//! cannot hold the server's memory or its sockets without end.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;

use super::ServeError;

/// How many connections, and how long for the headers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) connections: usize,
    pub(crate) read_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown`, then lets the connections in flight finish.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.read_timeout);
    tokio::pin!(shutdown);
    loop {
        // Past the cap, new connections wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.map_err(|_| ServeError::Listen(std::io::Error::other("closed")))?,
            () = &mut shutdown => break,
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors, a reset before accept: the next one may work.
                Err(error) => {
                    tracing::warn!("accepting a connection failed: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        stream.set_nodelay(true).ok();
        let service = TowerToHyperService::new(router.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away mid-request is not the server's failure.
            connection.await.ok();
            drop(slot);
        });
    }
    graceful.shutdown().await;
    Ok(())
}
