//! The seccomp filter: no sockets but Unix sockets (unless the command was granted network), no
//! tracing or reading other processes' memory, no io_uring (it bypasses seccomp), no kernel
//! keyrings, BPF or module loading, no TIOCSTI (typing into the user's terminal), and no
//! prlimit on another process (an RLIMIT_CPU of one second is a deferred SIGKILL of the agent,
//! which Landlock's signal scoping does not see).
//!
//! The program is written here as classic BPF, with the architecture checked first and the x32
//! system-call numbers on x86-64 refused, so a call cannot slip past under another number.

use crate::SandboxError;

pub const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
pub const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets into `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of `args[0]` and `args[1]` (little-endian).
const OFFSET_ARG0: u32 = 16;
const OFFSET_ARG1: u32 = 24;

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
#[cfg(target_arch = "x86_64")]
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// System calls refused with EPERM whatever the profile.
const ALWAYS_DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_setns,
    libc::SYS_kexec_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    // Administration: harmless to an ordinary user, whom the kernel refuses anyway, but a
    // command run by root keeps root's capabilities.
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// A jump target in the program being assembled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    KnownArchitecture,
    Allow,
    DenyPermission,
    DenySocket,
    NotIoctl,
    NotPrlimit,
}

enum Op {
    Load(u32),
    JumpIfEqual(u32, Label, Label),
    #[cfg(target_arch = "x86_64")]
    JumpIfAtLeast(u32, Label, Label),
    Return(u32),
    Mark(Label),
}

/// Resolves labels into a BPF program. Every jump goes forward, as classic BPF requires.
fn assemble(ops: &[Op]) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let mut positions = Vec::new();
    let mut count = 0usize;
    for op in ops {
        match op {
            Op::Mark(label) => positions.push((*label, count)),
            _ => count += 1,
        }
    }
    let target = |label: Label, at: usize| -> Result<u8, SandboxError> {
        if label == Label::Next {
            return Ok(0);
        }
        let position = positions
            .iter()
            .find(|(candidate, position)| *candidate == label && *position > at)
            .map(|(_, position)| *position)
            .ok_or_else(|| {
                SandboxError::Unavailable("seccomp program has a dangling jump".into())
            })?;
        u8::try_from(position - at - 1)
            .map_err(|_| SandboxError::Unavailable("seccomp program jump too long".into()))
    };
    let mut program = Vec::with_capacity(count);
    for op in ops {
        let at = program.len();
        let instruction = match *op {
            Op::Mark(_) => continue,
            Op::Load(offset) => statement(BPF_LD_W_ABS, offset),
            Op::Return(value) => statement(BPF_RET_K, value),
            Op::JumpIfEqual(value, yes, no) => {
                jump(BPF_JEQ_K, value, target(yes, at)?, target(no, at)?)
            }
            #[cfg(target_arch = "x86_64")]
            Op::JumpIfAtLeast(value, yes, no) => {
                jump(BPF_JGE_K, value, target(yes, at)?, target(no, at)?)
            }
        };
        program.push(instruction);
    }
    Ok(program)
}

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn number(call: libc::c_long) -> u32 {
    // System-call numbers are small non-negative constants.
    u32::try_from(call).unwrap_or(u32::MAX)
}

/// The filter for a profile with or without network.
pub fn program(network: bool) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let mut ops = vec![
        // Another architecture's numbers mean other calls: kill rather than guess.
        Op::Load(OFFSET_ARCH),
        Op::JumpIfEqual(AUDIT_ARCH, Label::KnownArchitecture, Label::Next),
        Op::Return(SECCOMP_RET_KILL_PROCESS),
        Op::Mark(Label::KnownArchitecture),
        Op::Load(OFFSET_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    ops.push(Op::JumpIfAtLeast(
        X32_SYSCALL_BIT,
        Label::DenyPermission,
        Label::Next,
    ));
    for &call in ALWAYS_DENIED {
        ops.push(Op::JumpIfEqual(
            number(call),
            Label::DenyPermission,
            Label::Next,
        ));
    }
    // prlimit64(pid, …) on any process but the caller (pid 0, as setrlimit and getrlimit call
    // it): the kernel lets a process set the limits of every other process of its user.
    ops.extend([
        Op::JumpIfEqual(number(libc::SYS_prlimit64), Label::Next, Label::NotPrlimit),
        Op::Load(OFFSET_ARG0),
        Op::JumpIfEqual(0, Label::Allow, Label::DenyPermission),
        Op::Mark(Label::NotPrlimit),
    ]);
    // ioctl(fd, TIOCSTI, …) pushes characters into a terminal's input.
    ops.extend([
        Op::JumpIfEqual(number(libc::SYS_ioctl), Label::Next, Label::NotIoctl),
        Op::Load(OFFSET_ARG1),
        Op::JumpIfEqual(
            u32::try_from(libc::TIOCSTI).unwrap_or(u32::MAX),
            Label::DenyPermission,
            Label::Allow,
        ),
        Op::Mark(Label::NotIoctl),
    ]);
    if !network {
        ops.extend([
            Op::JumpIfEqual(number(libc::SYS_socket), Label::Next, Label::Allow),
            Op::Load(OFFSET_ARG0),
            Op::JumpIfEqual(
                u32::try_from(libc::AF_UNIX).unwrap_or(u32::MAX),
                Label::Allow,
                Label::DenySocket,
            ),
        ]);
    }
    ops.extend([
        Op::Mark(Label::Allow),
        Op::Return(SECCOMP_RET_ALLOW),
        Op::Mark(Label::DenySocket),
        Op::Return(SECCOMP_RET_ERRNO | errno(libc::EACCES)),
        Op::Mark(Label::DenyPermission),
        Op::Return(SECCOMP_RET_ERRNO | errno(libc::EPERM)),
    ]);
    assemble(&ops)
}

fn errno(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(1) & 0xffff
}

/// Installs the filter on the calling thread (no_new_privs must already be set).
pub fn install(network: bool) -> Result<(), SandboxError> {
    let mut filter = program(network)?;
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len())
            .map_err(|_| SandboxError::Unavailable("seccomp program too long".into()))?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `program` points at `filter`, which outlives the call; the kernel copies it.
    let installed = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            0,
            &program as *const libc::sock_fprog,
        )
    };
    if installed != 0 {
        return Err(SandboxError::setup(
            "installing the seccomp filter",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
