//! Data-parallel `nabla train` under `mpirun -np 2`: equivalence with one process training on the
//! global batch, bit-identical repeats, resuming at another world size, and failing ranks ending
//! the job. Needs an MPI launcher on the PATH (`.ci/run` installs Debian's OpenMPI).

mod support;

use nabla_cpu::CpuBackend;
use nabla_nn::load_safetensors;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{nabla, stderr, temp};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The most a job in these tests may take before it counts as hung.
const JOB_LIMIT: Duration = Duration::from_secs(240);

/// Held by each test while it runs jobs: the jobs share this machine's cores and run one at a time.
static ONE_JOB_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`ONE_JOB_AT_A_TIME`] (a test that failed while holding it does not stop the others).
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `mpirun` with the options that let it run `np` ranks here: as root (OpenMPI refuses without
/// being told), on fewer cores than ranks, over shared memory and loopback TCP.
fn mpirun(np: usize) -> Command {
    let version = Command::new("mpirun")
        .arg("--version")
        .output()
        .unwrap_or_else(|e| {
            panic!("mpirun is needed for the distributed tests (apt-get install openmpi-bin): {e}")
        });
    let openmpi = String::from_utf8_lossy(&version.stdout).contains("Open MPI");
    let mut cmd = Command::new("mpirun");
    if openmpi {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .args(["--oversubscribe", "-np", &np.to_string()]);
    } else {
        cmd.args(["-n", &np.to_string()]);
    }
    cmd
}

/// Starts `cmd` with its output captured.
fn spawn_job(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the launcher starts")
}

/// Waits for `child` at most [`JOB_LIMIT`], killing it (and failing) if it runs longer.
fn wait_bounded(child: Child, what: &str) -> (Output, Duration) {
    wait_within(child, what, JOB_LIMIT)
}

/// Waits for `child` at most `limit`, killing it (and failing) if it runs longer.
fn wait_within(mut child: Child, what: &str, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let out = child.wait_with_output();
                panic!("{what} hung for {limit:?}: {out:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }
    let elapsed = start.elapsed();
    let out = child.wait_with_output().expect("output of a finished job");
    (out, elapsed)
}

/// The arguments of a quiet training run of `model` writing `ckpt`, with a global batch of 64
/// (unless `extra` sets it) and `extra`.
fn train_args(model: &str, ckpt: &Path, extra: &[&str]) -> Vec<String> {
    let batch = if extra.contains(&"--batch-size") {
        &[][..]
    } else {
        &["--batch-size", "64"][..]
    };
    let epochs = if extra.contains(&"--epochs") {
        &[][..]
    } else {
        &["--epochs", "1"][..]
    };
    let mut args: Vec<String> = ["train", "--model", model, "--no-plot", "-q"]
        .iter()
        .chain(batch)
        .chain(epochs)
        .map(|s| s.to_string())
        .collect();
    args.push("--checkpoint".into());
    args.push(ckpt.to_string_lossy().into_owned());
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// `nabla` with `args` on `np` ranks, bounded in time.
fn run_ranks(np: usize, args: &[String]) -> Output {
    let child = spawn_job(mpirun(np).arg(env!("CARGO_BIN_EXE_nabla")).args(args));
    wait_bounded(child, "mpirun").0
}

/// Fails unless the run succeeded.
fn check_ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what} failed: {}", stderr(o));
}

/// The model weights in the checkpoint at `path`, by name, widened to f64.
fn weights(path: &Path) -> Vec<(String, Vec<f64>)> {
    let file = load_safetensors(path, &CpuBackend::new()).expect("a readable checkpoint");
    file.tensors
        .into_iter()
        .filter(|(name, _)| name.starts_with("model."))
        .map(|(name, t)| {
            let v = t.to_host().expect("host copy").to_f64_vec();
            (name, v)
        })
        .collect()
}

/// The largest difference between the weights of two checkpoints, relative to the largest weight.
fn max_relative_difference(a: &Path, b: &Path) -> f64 {
    let (wa, wb) = (weights(a), weights(b));
    assert_eq!(
        wa.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        wb.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    assert!(!wa.is_empty(), "no weights in {}", a.display());
    let mut worst: f64 = 0.0;
    for ((name, x), (_, y)) in wa.iter().zip(&wb) {
        assert_eq!(x.len(), y.len(), "{name}");
        let scale = x.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
        for (p, q) in x.iter().zip(y) {
            worst = worst.max((p - q).abs() / scale);
        }
    }
    worst
}

/// Trains `model` with `optimizer` for 20 steps on one process with a batch of 64 and on two
/// ranks with 32 each; returns the largest relative difference of the weights.
fn one_versus_two_ranks(model: &str, optimizer: &str) -> f64 {
    let extra = ["--max-steps", "20", "--optimizer", optimizer];
    let one = temp(&format!("dist-one-{model}-{optimizer}.safetensors"));
    let two = temp(&format!("dist-two-{model}-{optimizer}.safetensors"));
    let args = train_args(model, &one, &extra);
    check_ok(
        &nabla(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        "one process",
    );
    check_ok(&run_ranks(2, &train_args(model, &two, &extra)), "two ranks");
    let diff = max_relative_difference(&one, &two);
    eprintln!(
        "{model} with {optimizer}: 2 ranks x 32 vs 1 x 64 after 20 steps, max relative weight \
         difference {diff:e}"
    );
    let _ = std::fs::remove_file(one);
    let _ = std::fs::remove_file(two);
    diff
}

#[test]
fn two_ranks_of_32_match_one_process_of_64_over_20_steps() {
    let _job = exclusive();
    for model in ["mlp", "cnn"] {
        // The two differ in summation order only: the mean of two means of 32 against one mean of
        // 64, and the all-reduce's sum. With SGD that stays in the last bits of f32.
        let sgd = one_versus_two_ranks(model, "sgd");
        assert!(sgd < 1e-6, "{model} with sgd: {sgd}");
        // Adam divides by the root of the squared gradients' average, which turns the last-bit
        // differences of a gradient that is zero up to rounding into differences of the step.
        let adam = one_versus_two_ranks(model, "adam");
        assert!(adam < 1e-4, "{model} with adam: {adam}");
    }
}

#[test]
fn two_runs_on_two_ranks_are_bit_identical_whatever_the_buckets() -> TestResult {
    let _job = exclusive();
    let a = temp("dist-rep-a.safetensors");
    let b = temp("dist-rep-b.safetensors");
    let c = temp("dist-rep-c.safetensors");
    // One bucket (the default 25 MiB holds the whole model), then one bucket per ~10 KB: the
    // gradients are reduced in other pieces, at other times, and come out the same.
    for (path, bucket) in [(&a, "25"), (&b, "25"), (&c, "0.01")] {
        let extra = ["--max-steps", "12", "--bucket-mib", bucket];
        check_ok(&run_ranks(2, &train_args("cnn", path, &extra)), "two ranks");
    }
    let first = weights(&a);
    assert_eq!(first, weights(&b));
    assert_eq!(first, weights(&c));
    for p in [a, b, c] {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

#[test]
fn a_run_resumes_at_another_world_size() -> TestResult {
    let _job = exclusive();
    let straight = temp("dist-straight.safetensors");
    check_ok(
        &run_ranks(2, &train_args("mlp", &straight, &["--max-steps", "16"])),
        "straight run",
    );
    // Two ranks for 8 steps, then one process for the other 8 (the global batch stays 64).
    let two_then_one = temp("dist-two-then-one.safetensors");
    check_ok(
        &run_ranks(2, &train_args("mlp", &two_then_one, &["--max-steps", "8"])),
        "first half on two ranks",
    );
    let args = train_args("mlp", &two_then_one, &["--max-steps", "16", "--resume"]);
    let o = nabla(&args.iter().map(String::as_str).collect::<Vec<_>>());
    check_ok(&o, "second half on one process");
    let diff = max_relative_difference(&straight, &two_then_one);
    eprintln!("resumed at another world size: max relative difference {diff:e}");
    assert!(diff < 1e-5, "{diff}");
    // And from one process to two.
    let one_then_two = temp("dist-one-then-two.safetensors");
    let args = train_args("mlp", &one_then_two, &["--max-steps", "8"]);
    check_ok(
        &nabla(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        "first half on one process",
    );
    check_ok(
        &run_ranks(
            2,
            &train_args("mlp", &one_then_two, &["--max-steps", "16", "--resume"]),
        ),
        "second half on two ranks",
    );
    let diff = max_relative_difference(&straight, &one_then_two);
    assert!(diff < 1e-5, "{diff}");
    for p in [straight, two_then_one, one_then_two] {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

#[test]
fn a_rank_that_fails_ends_the_job_with_an_error_naming_it() {
    let _job = exclusive();
    let ckpt = temp("dist-fail.safetensors");
    let good = train_args("mlp", &ckpt, &["--epochs", "5"]);
    let mut bad = good.clone();
    bad.extend(["--lr".to_string(), "-1".to_string()]);
    // Rank 0 starts training (and waits in its first collective); rank 1 rejects its options.
    let child = spawn_job(
        mpirun(1)
            .arg(env!("CARGO_BIN_EXE_nabla"))
            .args(&good)
            .arg(":")
            .args(["-np", "1"])
            .arg(env!("CARGO_BIN_EXE_nabla"))
            .args(&bad),
    );
    let (o, took) = wait_bounded(child, "a job with a failing rank");
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("rank 1 of 2"), "{err}");
    assert!(err.contains("--lr"), "{err}");
    eprintln!("the job ended {took:?} after its start");
    let _ = std::fs::remove_file(ckpt);
}

/// What a rank's error output must never hold: signs of memory corruption or a crash. (A rank
/// that the launcher stops after the other one failed may be reported as ended by a signal.)
const CRASHES: [&str; 5] = [
    "malloc",
    "double free",
    "corruption",
    "Segmentation",
    "panicked",
];

#[test]
fn ranks_started_with_different_options_end_the_job_with_one_error_naming_the_difference() {
    let _job = exclusive();
    let ckpt = temp("dist-disagree.safetensors");
    let mlp = |extra: &[&str]| train_args("mlp", &ckpt, extra);
    // (what differs, rank 0's arguments, rank 1's arguments)
    let cases = [
        (
            "--batch-size",
            mlp(&["--batch-size", "64"]),
            mlp(&["--batch-size", "32"]),
        ),
        ("--model", mlp(&[]), train_args("cnn", &ckpt, &[])),
        ("--epochs", mlp(&["--epochs", "1"]), mlp(&["--epochs", "2"])),
        (
            "--max-steps",
            mlp(&["--max-steps", "3"]),
            mlp(&["--max-steps", "5"]),
        ),
        (
            "--early-stopping",
            mlp(&[]),
            mlp(&["--early-stopping", "1"]),
        ),
    ];
    for (option, first, second) in cases {
        let child = spawn_job(
            mpirun(1)
                .arg(env!("CARGO_BIN_EXE_nabla"))
                .args(&first)
                .arg(":")
                .args(["-np", "1"])
                .arg(env!("CARGO_BIN_EXE_nabla"))
                .args(&second),
        );
        let (o, _) = wait_within(child, option, Duration::from_secs(30));
        let err = stderr(&o);
        assert!(!o.status.success(), "{option}: {err}");
        let expected =
            format!("the ranks disagree on the options of nabla train: rank 1 has {option} =");
        assert!(err.contains(&expected), "{option}: {err}");
        for crash in CRASHES {
            assert!(!err.contains(crash), "{option}: {err}");
        }
        assert!(
            !ckpt.exists(),
            "{option}: a refused job wrote its checkpoint"
        );
    }
}

#[test]
fn a_killed_rank_ends_the_job() {
    let _job = exclusive();
    let ckpt = temp("dist-killed.safetensors");
    let child = spawn_job(mpirun(2).arg(env!("CARGO_BIN_EXE_nabla")).args(train_args(
        "cnn",
        &ckpt,
        &["--epochs", "1000"],
    )));
    let launcher = child.id().to_string();
    // Wait until both ranks run and have trained a little, then kill one of them.
    let mut child = child;
    let victim = loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the job ended by itself ({status}) before a rank could be killed");
        }
        let ranks = Command::new("pgrep")
            .args(["-P", &launcher])
            .output()
            .expect("pgrep runs");
        let pids: Vec<String> = String::from_utf8_lossy(&ranks.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if pids.len() >= 2 {
            break pids[pids.len() - 1].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(2));
    let killed_at = Instant::now();
    let status = Command::new("kill")
        .args(["-9", &victim])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let (o, _) = wait_within(child, "a job with a killed rank", Duration::from_secs(30));
    let took = killed_at.elapsed();
    assert!(!o.status.success(), "{}", stderr(&o));
    eprintln!(
        "the job ended {took:?} after a rank was killed: {}",
        stderr(&o)
    );
    let _ = std::fs::remove_file(ckpt);
}

#[test]
fn a_global_batch_that_does_not_split_is_an_error() {
    let _job = exclusive();
    let ckpt = temp("dist-split.safetensors");
    let o = run_ranks(2, &train_args("mlp", &ckpt, &["--batch-size", "63"]));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("--batch-size 63 is the global batch"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Runs `ip` with `args`, failing the test on error.
fn ip(args: &[&str]) {
    let o = Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2) runs");
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Two network namespaces joined by a veth pair, `10.77.0.1` and `10.77.0.2`: two hosts on one
/// machine. Removed when dropped.
struct TwoHosts {
    names: [String; 2],
}

impl TwoHosts {
    const ADDRESSES: [&'static str; 2] = ["10.77.0.1", "10.77.0.2"];

    fn new() -> TwoHosts {
        let id = std::process::id();
        let names = [format!("nabla-a-{id}"), format!("nabla-b-{id}")];
        let veth = [format!("nva{id}"), format!("nvb{id}")];
        let hosts = TwoHosts { names };
        for name in &hosts.names {
            ip(&["netns", "add", name]);
        }
        ip(&[
            "link", "add", &veth[0], "type", "veth", "peer", "name", &veth[1],
        ]);
        for ((ns, dev), addr) in hosts.names.iter().zip(&veth).zip(Self::ADDRESSES) {
            ip(&["link", "set", dev, "netns", ns]);
            let cidr = format!("{addr}/24");
            ip(&["-n", ns, "addr", "add", &cidr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        hosts
    }

    /// A remote-shell agent for the launcher: `agent HOST COMMAND...` runs the command in HOST's
    /// namespace, as `ssh HOST COMMAND...` would on a real cluster.
    /// Each call appends its host to `log`.
    fn write_agent(&self, path: &Path, log: &Path) {
        let mut script = format!(
            "#!/bin/sh\nhost=\"$1\"; shift\necho \"$host\" >> '{}'\ncase \"$host\" in\n",
            log.display()
        );
        for (addr, ns) in Self::ADDRESSES.iter().zip(&self.names) {
            script.push_str(&format!("  {addr}) ns={ns} ;;\n"));
        }
        script.push_str("  *) echo \"unknown host $host\" >&2; exit 1 ;;\nesac\n");
        script.push_str("exec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n");
        std::fs::write(path, script).expect("agent script written");
        let status = Command::new("chmod")
            .args(["+x", &path.to_string_lossy()])
            .status()
            .expect("chmod runs");
        assert!(status.success());
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "delete", name]).status();
        }
    }
}

#[test]
#[ignore = "needs root for network namespaces; .ci/run runs it with --ignored"]
fn two_hosts_over_tcp_give_the_one_host_result() -> TestResult {
    let _job = exclusive();
    let hosts = TwoHosts::new();
    let agent = temp("rsh-agent.sh");
    let agent_log = temp("rsh-agent.log");
    hosts.write_agent(&agent, &agent_log);
    let across = temp("dist-hosts.safetensors");
    let args = train_args("cnn", &across, &["--max-steps", "12"]);
    let child = mpirun(2)
        .env_remove("OMPI_MCA_rmaps_base_oversubscribe")
        .args(["--host", &TwoHosts::ADDRESSES.join(",")])
        .args(["--mca", "plm_rsh_agent", &agent.to_string_lossy()])
        .args(["--mca", "btl", "tcp,self"])
        .args(["--mca", "btl_tcp_if_include", "10.77.0.0/24"])
        .args(["--mca", "oob_tcp_if_include", "10.77.0.0/24"])
        .arg(env!("CARGO_BIN_EXE_nabla"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_in(&hosts.names[0]);
    let (o, _) = wait_bounded(child, "the two-host job");
    check_ok(&o, "two hosts");
    // The launcher reached the second host through the agent (the first is its own).
    let reached = std::fs::read_to_string(&agent_log)?;
    assert_eq!(reached.trim(), TwoHosts::ADDRESSES[1], "{reached}");
    let local = temp("dist-one-host.safetensors");
    check_ok(
        &run_ranks(2, &train_args("cnn", &local, &["--max-steps", "12"])),
        "one host",
    );
    assert_eq!(weights(&across), weights(&local));
    for p in [agent, agent_log, across, local] {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// Starting a command inside a network namespace.
trait SpawnIn {
    /// Spawns the command under `ip netns exec NS`.
    fn spawn_in(&mut self, ns: &str) -> Child;
}

impl SpawnIn for Command {
    fn spawn_in(&mut self, ns: &str) -> Child {
        let mut wrapped = Command::new("ip");
        wrapped.args(["netns", "exec", ns]).arg(self.get_program());
        wrapped.args(self.get_args());
        for (k, v) in self.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        wrapped
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ip netns exec starts")
    }
}

#[test]
fn a_rank_that_never_starts_mpi_ends_the_job_after_the_timeout() {
    let _job = exclusive();
    let ckpt = temp("dist-silent.safetensors");
    // Rank 1 is not an MPI program at all: rank 0 waits for it in MPI_Init, up to the timeout.
    let child = spawn_job(
        mpirun(1)
            .env("NABLA_DIST_TIMEOUT", "3")
            .arg(env!("CARGO_BIN_EXE_nabla"))
            .args(train_args("mlp", &ckpt, &[]))
            .args([":", "-np", "1", "sleep", "600"]),
    );
    let (o, took) = wait_bounded(child, "a job with a silent rank");
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("MPI rank 0 failed"), "{err}");
    assert!(err.contains("did not start within 3 s"), "{err}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}
