//! The writer's and the barrier reader's round trips (actors/src/writer.rs, barrier.rs): a
//! request reaches the server after a network leg, Pod writes are judged on arrival, the store
//! commits it a moment later, and the answer travels back (or is lost: applied, answered as a
//! transport error). Answers to a crashed process reach no one.

use crate::api::{api_resource, arrive, perform};
use crate::election::user_agent;
use crate::world::{Answer, Event, Read, World};
use loadgen::store::RequestId;
use std::time::Duration;
use tidemark_engine::{
    Action, ResourceVersion, SeededBug, WriteError, WriteErrorKind, WriteId, WriteResult,
};

/// Every write carries this `timeout` (the writer's `with_deadline`: under leader election half
/// the gap between the lease duration and the renew deadline) and the server does not apply it
/// later: a leader's last writes cannot land after its successor took the Lease. Without it
/// (the seeded bug `fence-only-before-sending`) a write stuck on its way lands whenever it
/// arrives.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(2);

impl World {
    pub(crate) fn write_arrives(
        &mut self,
        sent: Duration,
        epoch: u64,
        shard: usize,
        id: WriteId,
        action: Action,
    ) {
        if let Some(until) = self.held_until(epoch) {
            let held = Event::WriteArrives {
                sent,
                epoch,
                shard,
                id,
                action,
            };
            self.queue.at(until, held);
            return;
        }
        let now = self.now();
        if self.faults.fails_write(&mut self.rng, now) {
            self.note(format_args!(
                "server {} {} {}: 500, not applied",
                action.verb(),
                action.resource(),
                crate::world::describe(&action)
            ));
            let result = WriteResult::Failed(WriteError {
                kind: WriteErrorKind::Server,
                message: "500 Internal Server Error (simulated)".into(),
            });
            let latency = self.faults.network(&mut self.rng, now);
            let answer = Event::WriteAnswered {
                epoch,
                shard,
                id,
                result,
            };
            self.after(latency, answer);
            return;
        }
        let arrival = arrive(&self.store, &self.oracle, &action);
        // Between arrival and commit other writes may commit: the oracle's arrival rule is
        // about exactly that window.
        let processing = if self.faults.active(now) && self.rng.f64() < self.faults.slow_write {
            self.faults.network(&mut self.rng, now)
        } else {
            Duration::from_micros(self.rng.u64(0..=2_000))
        };
        self.after(
            processing,
            Event::WriteCommits {
                sent,
                epoch,
                shard,
                id,
                action,
                arrival,
            },
        );
    }

    /// When a request of process `epoch` on its way now gets through, if a partition holds it.
    pub(crate) fn held_until(&self, epoch: u64) -> Option<Duration> {
        self.partitioned
            .filter(|(cut, until)| *cut == epoch && self.now() < *until)
            .map(|(_, until)| until)
    }

    pub(crate) fn write_commits(
        &mut self,
        sent: Duration,
        epoch: u64,
        shard: usize,
        id: WriteId,
        action: Action,
        arrival: Option<RequestId>,
    ) {
        let deadline = self.bug != Some(SeededBug::FenceOnlyBeforeSending);
        let expired = deadline && self.now() > sent + WRITE_DEADLINE;
        let result = match arrival {
            _ if expired => WriteResult::Failed(WriteError {
                kind: WriteErrorKind::Server,
                message: format!("the request's timeout of {WRITE_DEADLINE:?} passed: not applied"),
            }),
            Some(arrival) => {
                let ua = user_agent(epoch);
                let result = loadgen::store::commit::sync_scope(arrival, || {
                    perform(&self.store, &action, &ua)
                });
                self.oracle.depart(arrival);
                result
            }
            None => perform(&self.store, &action, &user_agent(epoch)),
        };
        if expired && let Some(arrival) = arrival {
            self.oracle.depart(arrival);
        }
        let now = self.now();
        let lost = self.faults.loses_response(&mut self.rng, now);
        self.note(format_args!(
            "server {} {} {}: {}{}",
            action.verb(),
            action.resource(),
            crate::world::describe(&action),
            outcome(&result),
            if lost { " (response lost)" } else { "" }
        ));
        let result = if lost {
            WriteResult::Failed(WriteError {
                kind: WriteErrorKind::Transport,
                message: "connection reset before the response".into(),
            })
        } else {
            result
        };
        let latency = self.faults.network(&mut self.rng, now);
        self.after(
            latency,
            Event::WriteAnswered {
                epoch,
                shard,
                id,
                result,
            },
        );
    }

    pub(crate) fn write_answered(
        &mut self,
        epoch: u64,
        shard: usize,
        id: WriteId,
        result: WriteResult,
    ) {
        if epoch != self.epoch || !self.up {
            return;
        }
        let now = self.process_now();
        if let WriteResult::Written { resource_version } = &result
            && let Ok(revision) = ResourceVersion::parse(resource_version)
        {
            self.tell_every_shard(revision);
        }
        self.shards[shard].write_done(id, result, now);
        self.pump(shard);
    }

    pub(crate) fn read_arrives(&mut self, epoch: u64, shard: usize, read: Read) {
        let answer = match read {
            Read::Barrier(id) => Answer::Barrier(id, self.store.current_revision()),
            Read::Objects(id, objects) => Answer::Objects(
                id,
                objects
                    .iter()
                    .map(|(r, key)| {
                        self.store
                            .get(api_resource(*r), key.namespace(), key.name())
                            .and_then(|s| ResourceVersion::new(s.rv))
                    })
                    .collect(),
            ),
        };
        let latency = self.network();
        self.after(
            latency,
            Event::ReadAnswered {
                epoch,
                shard,
                answer,
            },
        );
    }

    pub(crate) fn read_answered(&mut self, epoch: u64, shard: usize, answer: Answer) {
        if epoch != self.epoch || !self.up {
            return;
        }
        let now = self.process_now();
        match answer {
            Answer::Barrier(id, revision) => {
                let result = ResourceVersion::new(revision)
                    .ok_or_else(|| format!("revision {revision} is not comparable"));
                if let Ok(revision) = result {
                    self.tell_every_shard(revision);
                }
                self.shards[shard].barrier_done(id, result, now);
            }
            Answer::Objects(id, versions) => {
                self.shards[shard].live_read_done(id, Ok(versions), now);
            }
        }
        self.pump(shard);
    }
}

fn outcome(result: &WriteResult) -> String {
    match result {
        WriteResult::Written { resource_version } => format!("rv {resource_version}"),
        WriteResult::Deleted => "deleted".into(),
        WriteResult::Withdrawn => "withdrawn".into(),
        WriteResult::Failed(e) => format!("{:?}", e.kind),
    }
}
