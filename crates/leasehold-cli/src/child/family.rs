//! Everything the command started: its process group and, on Linux, every descendant of
//! leasehold, found by walking `/proc` (the ppid links) from leasehold's pid. So that processes
//! that double-fork or `setsid` stay visible, leasehold becomes a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) before it starts the command: orphans below it are re-parented to
//! it instead of to init. It then reaps those re-parented orphans itself, each by its pid (never
//! `waitpid(-1)`: tokio reaps the command itself).
//!
//! Elsewhere only the command's process group can be seen (`killpg(group, 0)`), and a process
//! that leaves it (`setsid`) cannot.
//!
//! Under `run --shards` several commands run at once, one [`Family`] each
//! ([`Family::prepare_own`]): a family then counts only its command's group, the processes below
//! its command, and those it once saw there that were re-parented to leasehold. Every command's
//! own pid is registered while tokio has not reaped it, so that no family reaps another's
//! command.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::Child;

/// What is left of the command's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Remaining {
    /// Nothing: every process is gone.
    None,
    /// This many processes (in the group or below leasehold) are alive.
    Counted(usize),
    /// The group has members, but how many is not known (no `/proc` to count them).
    Some,
}

impl Remaining {
    /// True if anything is alive.
    pub(crate) fn any(self) -> bool {
        self != Self::None
    }

    /// "1 process", "3 processes" or "processes", for messages.
    pub(crate) fn describe(self) -> String {
        match self {
            Self::None => "no process".to_owned(),
            Self::Counted(1) => "1 process".to_owned(),
            Self::Counted(n) => format!("{n} processes"),
            Self::Some => "processes".to_owned(),
        }
    }
}

/// The pids of the commands tokio has started and not yet reaped: no family reaps them.
static COMMANDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn commands() -> std::sync::MutexGuard<'static, Vec<i32>> {
    COMMANDS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which processes a family counts.
#[derive(Debug)]
enum Scope {
    /// Every descendant of leasehold (one command at a time).
    All,
    /// Only its own command's (several at once): the pids once seen below the command, kept
    /// while they live.
    Own(Mutex<HashSet<i32>>),
}

/// The command's processes, as far as leasehold can see them.
#[derive(Debug)]
pub(crate) struct Family {
    /// The command's process group (its pid), unless it runs in leasehold's (`--foreground`).
    group: Option<Pid>,
    /// The command's pid while tokio has not reaped it: never reaped nor signalled by pid here.
    main: Option<Pid>,
    /// SIGCHLD: re-parented orphans to reap.
    sigchld: Option<tokio::signal::unix::Signal>,
    scope: Scope,
}

impl Family {
    /// Prepares to start a command: makes leasehold a child subreaper (Linux) and listens for
    /// SIGCHLD, both before the command starts so that no orphan is missed.
    pub(crate) fn prepare() -> Self {
        Self::with_scope(Scope::All)
    }

    /// As [`prepare`](Self::prepare), for one of several commands running at once: the family
    /// counts only its own command's processes.
    pub(crate) fn prepare_own() -> Self {
        Self::with_scope(Scope::Own(Mutex::new(HashSet::new())))
    }

    fn with_scope(scope: Scope) -> Self {
        procs::become_subreaper();
        let sigchld = procs::SUPPORTED
            .then(|| tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok())
            .flatten();
        Self {
            group: None,
            main: None,
            sigchld,
            scope,
        }
    }

    /// The command started: its group (unless `--foreground`) and its pid.
    pub(crate) fn adopt(&mut self, child: &Child) {
        self.group = child.group();
        self.main = child.pid();
        if let Some(main) = self.main {
            commands().push(main.as_raw());
        }
    }

    /// The command itself has been reaped (by tokio): its pid may now be anyone's.
    pub(crate) fn main_reaped(&mut self) {
        if let Some(main) = self.main.take() {
            commands().retain(|pid| *pid != main.as_raw());
        }
    }

    /// Lists what is alive of this family (reaping dead orphans on the way); `None` without
    /// `/proc`.
    fn look(&self) -> Option<Vec<Member>> {
        let mains = commands().clone();
        match &self.scope {
            Scope::All => procs::look(self.group, self.main, &mains, None),
            Scope::Own(seen) => {
                let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
                let alive = procs::look(self.group, self.main, &mains, Some(&*seen))?;
                *seen = alive.iter().map(|m| m.pid.as_raw()).collect();
                Some(alive)
            }
        }
    }

    /// Resolves at the next SIGCHLD (pending where nothing needs reaping); then call
    /// [`reap`](Self::reap). Cancel-safe.
    pub(crate) async fn sigchld(&mut self) {
        match self.sigchld.as_mut() {
            Some(signal) => {
                if signal.recv().await.is_none() {
                    self.sigchld = None;
                }
            }
            None => std::future::pending().await,
        }
    }

    /// Reaps the orphans re-parented to leasehold that have exited (each by its pid).
    pub(crate) fn reap(&self) {
        self.look();
    }

    /// Reaps what has exited, then counts what is alive: the group's members and leasehold's
    /// descendants (but not the command itself while it runs).
    pub(crate) fn remaining(&self) -> Remaining {
        match self.look() {
            Some(alive) if alive.is_empty() => Remaining::None,
            Some(alive) => Remaining::Counted(alive.len()),
            None => match self.group {
                Some(group) if killpg(group, None).is_ok() => Remaining::Some,
                _ => Remaining::None,
            },
        }
    }

    /// Sends `signal` (and then SIGCONT, as [`Child::deliver`] does, unless it is SIGKILL or
    /// SIGCONT) to every process of the command but the command itself: to its group if
    /// `with_group` (once the command has exited; while it runs, [`Child::deliver`] signals the
    /// group), and by pid to each descendant outside the group.
    pub(crate) fn deliver(&self, signal: Signal, with_group: bool) {
        let alive = self.look();
        let outside: Vec<Pid> = alive
            .as_ref()
            .map(|alive| {
                alive
                    .iter()
                    .filter(|p| Some(p.pgid) != self.group)
                    .map(|p| p.pid)
                    .collect()
            })
            .unwrap_or_default();
        // The group's id stays reserved while any member lives, so only the command's own
        // processes are reached; with /proc, it is signalled only when members were just seen.
        let group = self.group.filter(|_| with_group).filter(|group| {
            alive
                .as_ref()
                .is_none_or(|alive| alive.iter().any(|p| p.pgid == *group))
        });
        let send = |signal: Signal| {
            if let Some(group) = group {
                let _ = killpg(group, signal);
            }
            for pid in &outside {
                let _ = nix::sys::signal::kill(*pid, signal);
            }
        };
        send(signal);
        if signal != Signal::SIGKILL && signal != Signal::SIGCONT {
            send(Signal::SIGCONT);
        }
        tracing::debug!(%signal, group = ?group, outside = outside.len(),
            "leasehold: signalled what the command started");
    }
}

impl Drop for Family {
    fn drop(&mut self) {
        // A command never reaped (leasehold gives up on it) keeps its pid out of the registry.
        self.main_reaped();
    }
}

/// A live process of the command's, as `/proc` shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member {
    pid: Pid,
    pgid: Pid,
}

#[cfg(target_os = "linux")]
mod procs {
    use std::collections::{HashMap, HashSet};

    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;

    use super::Member;

    pub(super) const SUPPORTED: bool = true;

    /// Makes leasehold the reaper of orphans below it, so that they stay its descendants.
    pub(super) fn become_subreaper() {
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::debug!(error = %e, "leasehold: cannot become a child subreaper; \
                processes that leave the command's tree will not be seen");
        }
    }

    /// One process of `/proc/PID/stat`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct Stat {
        pub(super) pid: i32,
        pub(super) ppid: i32,
        pub(super) pgid: i32,
        /// Exited, not yet reaped (`Z`), or being torn down (`X`).
        pub(super) dead: bool,
    }

    /// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp …`, where comm may hold spaces and
    /// parentheses (so the last `)` ends it).
    pub(super) fn parse_stat(text: &str) -> Option<Stat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let pid = text.get(..open)?.trim().parse().ok()?;
        let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgid = fields.next()?.parse().ok()?;
        Some(Stat {
            pid,
            ppid,
            pgid,
            dead: matches!(state, "Z" | "X" | "x"),
        })
    }

    /// Every process now (those that exit while being read are skipped).
    fn scan() -> Option<Vec<Stat>> {
        let entries = match std::fs::read_dir("/proc") {
            Ok(entries) => entries,
            Err(e) => {
                tracing::debug!(error = %e, "leasehold: cannot read /proc");
                return None;
            }
        };
        let mut all = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                && let Some(stat) = parse_stat(&text)
            {
                all.push(stat);
            }
        }
        Some(all)
    }

    /// The live processes of `group` and below `me`, except `me` and `main`; the dead children
    /// of `me` (but `main`) to reap.
    #[cfg(test)]
    pub(super) fn select(
        all: &[Stat],
        me: i32,
        group: Option<i32>,
        main: Option<i32>,
    ) -> (Vec<Stat>, Vec<i32>) {
        select_with(all, me, (group, main), &[], None)
    }

    /// The live processes of `group` and below `me`, except `me` and `main`, and the dead
    /// children of `me` to reap, except the `commands` tokio still has to reap. With `own`
    /// (the pids this family saw before), only the processes of the group, those below `main`
    /// and those of `own` are counted.
    pub(super) fn select_with(
        all: &[Stat],
        me: i32,
        (group, main): (Option<i32>, Option<i32>),
        commands: &[i32],
        own: Option<&HashSet<i32>>,
    ) -> (Vec<Stat>, Vec<i32>) {
        let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
        for p in all {
            children.entry(p.ppid).or_default().push(p);
        }
        // Pids already taken: /proc is read while it changes, so never loop on a pid seen twice.
        let below_of = |root: i32| {
            let mut below = Vec::new();
            let mut seen = HashSet::from([root]);
            let mut todo = vec![root];
            while let Some(parent) = todo.pop() {
                for p in children.get(&parent).into_iter().flatten() {
                    if seen.insert(p.pid) {
                        below.push(**p);
                        todo.push(p.pid);
                    }
                }
            }
            (below, seen)
        };
        let (below, seen) = below_of(me);
        let zombies = below
            .iter()
            .filter(|p| p.dead && p.ppid == me && Some(p.pid) != main && !commands.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        let mut alive: Vec<Stat> = below.into_iter().filter(|p| !p.dead).collect();
        if let Some(group) = group {
            let outside_tree = all
                .iter()
                .filter(|p| p.pgid == group && !seen.contains(&p.pid));
            alive.extend(outside_tree.filter(|p| !p.dead));
        }
        alive.retain(|p| p.pid != me && Some(p.pid) != main);
        if let Some(own) = own {
            let under_main = main.map(|main| below_of(main).1).unwrap_or_default();
            alive.retain(|p| {
                Some(p.pgid) == group || under_main.contains(&p.pid) || own.contains(&p.pid)
            });
        }
        (alive, zombies)
    }

    /// Reaps the dead orphans re-parented to leasehold, then lists the live processes of
    /// `group` and below leasehold (except `main`; with `own`, only this family's: see
    /// [`select_with`]). `None` without `/proc`.
    pub(super) fn look(
        group: Option<Pid>,
        main: Option<Pid>,
        commands: &[i32],
        own: Option<&HashSet<i32>>,
    ) -> Option<Vec<Member>> {
        let all = scan()?;
        let me = i32::try_from(std::process::id()).ok()?;
        let ids = (group.map(Pid::as_raw), main.map(Pid::as_raw));
        let (alive, zombies) = select_with(&all, me, ids, commands, own);
        for pid in zombies {
            // By pid only, and never blocking: tokio reaps the commands themselves.
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
        Some(
            alive
                .into_iter()
                .map(|p| Member {
                    pid: Pid::from_raw(p.pid),
                    pgid: Pid::from_raw(p.pgid),
                })
                .collect(),
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn stat(pid: i32, ppid: i32, pgid: i32, dead: bool) -> Stat {
            Stat {
                pid,
                ppid,
                pgid,
                dead,
            }
        }

        #[test]
        fn stat_lines_with_odd_names_parse() {
            let line = "4242 (a (weird) name) S 4000 4242 4000 0 -1 4194560 90 0 0 0";
            assert_eq!(parse_stat(line), Some(stat(4242, 4000, 4242, false)));
            assert_eq!(parse_stat("7 (sh) Z 1 7 7 0"), Some(stat(7, 1, 7, true)));
            assert_eq!(parse_stat("garbage"), None);
            assert_eq!(parse_stat("12 (x) S"), None);
        }

        #[test]
        fn descendants_and_group_members_are_found_and_dead_orphans_reaped() {
            let me = 100;
            let all = [
                stat(1, 0, 1, false),
                stat(me, 1, me, false),
                stat(200, me, 200, false), // the command, leading its group
                stat(201, 200, 200, false), // its child
                stat(300, me, 300, false), // re-parented after setsid
                stat(301, 300, 300, false), // and its child
                stat(400, me, 200, true),  // a dead orphan of the group: reaped
                stat(500, 1, 200, false),  // in the group, but not below leasehold
                stat(600, 1, 600, false),  // unrelated
            ];
            let (alive, zombies) = select(&all, me, Some(200), Some(200));
            let mut pids: Vec<i32> = alive.iter().map(|p| p.pid).collect();
            pids.sort_unstable();
            assert_eq!(pids, [201, 300, 301, 500]);
            assert_eq!(zombies, [400]);
            // The command, dead but not yet reaped by tokio, is left alone.
            let all = [stat(me, 1, me, false), stat(200, me, 200, true)];
            let (alive, zombies) = select(&all, me, Some(200), Some(200));
            assert!(alive.is_empty() && zombies.is_empty());
            // Once tokio has reaped it, a dead child of that pid is an orphan to reap.
            let (_, zombies) = select(&all, me, Some(200), None);
            assert_eq!(zombies, [200]);
            // --foreground: no group of its own, descendants only.
            let all = [
                stat(me, 1, 50, false),
                stat(200, me, 50, false),
                stat(201, 200, 50, false),
                stat(700, 1, 50, false), // leasehold's group, not below it
            ];
            let (alive, _) = select(&all, me, None, None);
            let mut pids: Vec<i32> = alive.iter().map(|p| p.pid).collect();
            pids.sort_unstable();
            assert_eq!(pids, [200, 201]);
        }

        #[test]
        fn a_family_of_several_counts_only_its_own_and_reaps_no_other_command() {
            let me = 100;
            let all = [
                stat(me, 1, me, false),
                stat(200, me, 200, false),  // this shard's command
                stat(201, 200, 200, false), // its child
                stat(202, 200, 202, false), // its child that left the group
                stat(300, me, 300, true),   // another shard's command, exited, not yet reaped
                stat(301, me, 301, false),  // an orphan of the other shard's
                stat(400, me, 400, false),  // an orphan this family saw before
                stat(500, me, 500, true),   // a dead orphan: reaped
            ];
            let own = HashSet::from([400]);
            let (alive, zombies) =
                select_with(&all, me, (Some(200), Some(200)), &[200, 300], Some(&own));
            let mut pids: Vec<i32> = alive.iter().map(|p| p.pid).collect();
            pids.sort_unstable();
            assert_eq!(pids, [201, 202, 400]);
            assert_eq!(zombies, [500]);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod procs {
    use nix::unistd::Pid;

    use super::Member;

    pub(super) const SUPPORTED: bool = false;

    /// Only Linux has `PR_SET_CHILD_SUBREAPER` here.
    pub(super) fn become_subreaper() {}

    /// Without `/proc`, nothing is listed.
    pub(super) fn look(
        _group: Option<Pid>,
        _main: Option<Pid>,
        _commands: &[i32],
        _own: Option<&std::collections::HashSet<i32>>,
    ) -> Option<Vec<Member>> {
        None
    }
}
