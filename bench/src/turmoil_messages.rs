//! The datagrams of the turmoil workload and the counts a run keeps.

/// Every host listens on this UDP port.
pub const PORT: u16 = 9_000;

/// One datagram: a tag byte and three little-endian `u64` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// gocd → kube-api: a pod for job `job`.
    CreatePod { job: u64 },
    /// kube-api → kubelet: start `pod` for `job`; its container is up after `start_ms`.
    StartPod { pod: u64, job: u64, start_ms: u64 },
    /// agent → gocd.
    Register { pod: u64 },
    /// gocd → agent.
    Registered { pod: u64 },
    /// agent → gocd, every 5 s.
    Ping { pod: u64 },
    /// agent → gocd: work for the job this pod was created for?
    GetWork { pod: u64, job: u64 },
    /// gocd → agent: run the job for `runtime_ms`.
    Work { pod: u64, runtime_ms: u64 },
    /// gocd → agent: nothing for you; back off.
    NoWork { pod: u64 },
    /// agent → gocd.
    Completed { pod: u64, job: u64 },
    /// gocd → kube-api.
    DeletePod { pod: u64 },
    /// kube-api → kubelet: stop the pod's agent.
    KillPod { pod: u64 },
}

pub const ENCODED_LENGTH: usize = 25;

impl Message {
    fn parts(self) -> (u8, [u64; 3]) {
        match self {
            Message::CreatePod { job } => (1, [job, 0, 0]),
            Message::StartPod { pod, job, start_ms } => (2, [pod, job, start_ms]),
            Message::Register { pod } => (3, [pod, 0, 0]),
            Message::Registered { pod } => (4, [pod, 0, 0]),
            Message::Ping { pod } => (5, [pod, 0, 0]),
            Message::GetWork { pod, job } => (6, [pod, job, 0]),
            Message::Work { pod, runtime_ms } => (7, [pod, runtime_ms, 0]),
            Message::NoWork { pod } => (8, [pod, 0, 0]),
            Message::Completed { pod, job } => (9, [pod, job, 0]),
            Message::DeletePod { pod } => (10, [pod, 0, 0]),
            Message::KillPod { pod } => (11, [pod, 0, 0]),
        }
    }

    pub fn encode(self) -> [u8; ENCODED_LENGTH] {
        let (tag, fields) = self.parts();
        let mut bytes = [0u8; ENCODED_LENGTH];
        bytes[0] = tag;
        for (index, field) in fields.iter().enumerate() {
            bytes[1 + 8 * index..9 + 8 * index].copy_from_slice(&field.to_le_bytes());
        }
        bytes
    }

    /// `None` for a datagram that is not a message of this workload.
    pub fn decode(bytes: &[u8]) -> Option<Message> {
        if bytes.len() != ENCODED_LENGTH {
            return None;
        }
        let field = |index: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[1 + 8 * index..9 + 8 * index]);
            u64::from_le_bytes(word)
        };
        let (a, b, c) = (field(0), field(1), field(2));
        Some(match bytes[0] {
            1 => Message::CreatePod { job: a },
            2 => Message::StartPod {
                pod: a,
                job: b,
                start_ms: c,
            },
            3 => Message::Register { pod: a },
            4 => Message::Registered { pod: a },
            5 => Message::Ping { pod: a },
            6 => Message::GetWork { pod: a, job: b },
            7 => Message::Work {
                pod: a,
                runtime_ms: b,
            },
            8 => Message::NoWork { pod: a },
            9 => Message::Completed { pod: a, job: b },
            10 => Message::DeletePod { pod: a },
            11 => Message::KillPod { pod: a },
            _ => return None,
        })
    }
}

/// What one turmoil run did, and a hash of every message gocd received with its time, so that
/// two runs can be compared exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub jobs_arrived: u64,
    pub pods_created: u64,
    pub agents_registered: u64,
    pub pings: u64,
    pub get_work_calls: u64,
    pub jobs_assigned: u64,
    pub jobs_completed: u64,
    pub pods_deleted: u64,
    pub pods_killed: u64,
    pub messages_sent: u64,
    pub send_failures: u64,
    pub log_hash: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Counts {
    /// Fold a message gocd received at `now_ms` into `log_hash` (FNV-1a, fixed and portable).
    pub fn fold(&mut self, now_ms: u64, message: &Message) {
        if self.log_hash == 0 {
            self.log_hash = FNV_OFFSET;
        }
        for byte in now_ms.to_le_bytes().iter().chain(message.encode().iter()) {
            self.log_hash ^= u64::from(*byte);
            self.log_hash = self.log_hash.wrapping_mul(FNV_PRIME);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_survives_encoding() {
        let messages = [
            Message::CreatePod { job: 7 },
            Message::StartPod {
                pod: 1,
                job: 2,
                start_ms: 3_000,
            },
            Message::Register { pod: 4 },
            Message::Registered { pod: 4 },
            Message::Ping { pod: 5 },
            Message::GetWork { pod: 6, job: 9 },
            Message::Work {
                pod: 6,
                runtime_ms: 60_000,
            },
            Message::NoWork { pod: 6 },
            Message::Completed { pod: 6, job: 9 },
            Message::DeletePod { pod: 6 },
            Message::KillPod { pod: u64::MAX },
        ];
        for message in messages {
            assert_eq!(Message::decode(&message.encode()), Some(message));
        }
        assert_eq!(Message::decode(&[0u8; ENCODED_LENGTH]), None);
        assert_eq!(Message::decode(&[1u8; 3]), None);
    }

    #[test]
    fn the_log_hash_depends_on_time_and_message() {
        let mut one = Counts::default();
        one.fold(10, &Message::Ping { pod: 1 });
        let mut two = Counts::default();
        two.fold(11, &Message::Ping { pod: 1 });
        let mut three = Counts::default();
        three.fold(10, &Message::Ping { pod: 2 });
        assert_ne!(one.log_hash, two.log_hash);
        assert_ne!(one.log_hash, three.log_hash);
    }
}
