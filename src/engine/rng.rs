//! Seeded, portable random streams, one per concern.

pub(crate) use crate::component::Random;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

/// The concerns that draw randomness. Each gets its own stream derived from the run seed, so
/// that enabling a fault (which draws from `Faults`) never changes job arrivals (`Workload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StreamId {
    /// Job arrivals and their profiles and runtimes.
    Workload,
    /// Fault times and targets.
    Faults,
    /// The swarm's draw of which fault kinds and settings a run gets (`swarm = true`).
    Swarm,
    /// Message latencies.
    Network,
    /// Pod start-up times on the kubelets.
    Kubelet,
    /// The GoCD server's process ids, one per start.
    Server,
    /// Go-agent uuids.
    Agents,
    /// Leader-election replicas; each replica forks its own stream from it.
    Leader,
    /// Kubernetes API errors injected at the configured rate.
    KubeApi,
    /// Go-agent boot times (`[server] agent_boot`), one per container start.
    AgentBoot,
}

impl StreamId {
    fn salt(self) -> u64 {
        // Fixed constants: changing one changes every fingerprint.
        match self {
            StreamId::Workload => 0x5741_4b4c_4f41_4401,
            StreamId::Faults => 0x4641_554c_5453_0002,
            StreamId::Swarm => 0x5357_4152_4d00_0003,
            StreamId::Network => 0x4e45_5457_4f52_4b04,
            StreamId::Kubelet => 0x4b55_4245_4c45_5405,
            StreamId::Server => 0x5345_5256_4552_0006,
            StreamId::Agents => 0x4147_454e_5453_0007,
            StreamId::Leader => 0x4c45_4144_4552_0008,
            StreamId::KubeApi => 0x4b55_4245_4150_4909,
            StreamId::AgentBoot => 0x4147_4254_424f_4f0a,
        }
    }
}

/// One random stream (xoshiro256++, a portable, documented generator).
#[derive(Clone, Debug)]
pub struct Stream {
    rng: Xoshiro256PlusPlus,
}

impl Stream {
    /// The stream `id` of the run seeded with `seed`.
    pub fn new(seed: u64, id: StreamId) -> Stream {
        Stream {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ id.salt()),
        }
    }

    /// A child stream (e.g. one per replica), independent of later draws on `self`.
    pub fn fork(&mut self) -> Stream {
        Stream {
            rng: Xoshiro256PlusPlus::seed_from_u64(self.rng.next_u64()),
        }
    }
}

impl Random for Stream {
    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::{Random, Stream, StreamId};

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a = Stream::new(7, StreamId::Workload);
        let mut b = Stream::new(7, StreamId::Workload);
        let mut c = Stream::new(7, StreamId::Faults);
        let draws_a: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let draws_b: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let draws_c: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(draws_a, draws_b);
        assert_ne!(draws_a, draws_c);
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut s = Stream::new(1, StreamId::Network);
        for _ in 0..1000 {
            let v = s.range_inclusive(2, 40);
            assert!((2..=40).contains(&v));
            assert!(s.unit() < 1.0);
        }
        assert_eq!(s.range_inclusive(5, 5), 5);
    }
}
