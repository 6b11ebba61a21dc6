"""A minimal stand-in of maf-sandbox's backend protocol, for testing mafsbx.maf.

maf-sandbox cannot be installed on the machines this project builds on, so
the adapter is tested against this: the protocol's types, written from the
behavioural description of the Python backend (its data model: enums, key,
spec, limits, declarations, exec result, entries, disposal results, and the
error classes with the built-ins they derive from). It holds no behaviour
beyond what those types do themselves (normalisation, validation, folding),
so a test passes only when the adapter does the protocol's work.

It is importable as ``maf_sandbox`` only with tests/python on the path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import (
    Dict,
    FrozenSet,
    Literal,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    runtime_checkable,
)

STAND_IN = True


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)


class Isolation(_StrEnum):
    NONE = "none"
    RUNTIME = "runtime"
    PROCESS = "os_process"
    CONTAINER = "container"
    HARDENED_CONTAINER = "hardened_container"
    MICROVM = "microvm"
    VM = "vm"


class IsolationScope(_StrEnum):
    CONVERSATION = "conversation"
    CALL = "call"


class Egress(_StrEnum):
    UNRESTRICTED = "unrestricted"
    ALLOWLIST = "allowlist"
    CLOSED = "closed"


class Capability(_StrEnum):
    EXEC = "exec"
    RUN_CODE = "run_code"
    HOST_TOOLS = "host_tools"
    FILES_IN = "files_in"
    FILES_OUT = "files_out"
    FILES_LIST = "files_list"
    FILES_DELETE = "files_delete"
    SNAPSHOT = "snapshot"
    ATTACHED_IDENTITY = "attached_identity"
    RECLAIM = "reclaim"


class OsFamily(_StrEnum):
    POSIX = "posix"
    WINDOWS = "windows"


class EntryKind(_StrEnum):
    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


DEFAULT_CAPABILITIES: FrozenSet[Capability] = frozenset({Capability.EXEC, Capability.FILES_IN})


@dataclass(frozen=True)
class SandboxKey:
    scope: str
    thread_id: str
    agent_dir: str
    call_id: str = ""


@dataclass(frozen=True)
class TransferLimits:
    max_bytes_per_file: int
    max_total_bytes: int
    max_files: int


DEFAULT_TRANSFER_LIMITS = TransferLimits(8 * 1024 * 1024, 32 * 1024 * 1024, 64)


@dataclass(frozen=True)
class SandboxLimits:
    files_in: TransferLimits = DEFAULT_TRANSFER_LIMITS
    files_out: TransferLimits = DEFAULT_TRANSFER_LIMITS


DEFAULT_SANDBOX_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class DeclaredOutput:
    path: str
    disposition: str = "land"
    media_type: Optional[str] = None
    required: bool = True
    name: Optional[str] = None


@dataclass(frozen=True)
class SandboxSpec:
    kind: str
    image: Optional[str] = None
    image_id: Optional[str] = None
    egress_allow: Tuple[str, ...] = ()
    work_dir: Optional[str] = "/maf-sandbox/work"
    labels: Dict[str, str] = field(default_factory=dict)
    requires: FrozenSet[Capability] = DEFAULT_CAPABILITIES
    min_isolation: Optional[Isolation] = None
    declared_outputs: Tuple[DeclaredOutput, ...] = ()
    files_in: TransferLimits = DEFAULT_TRANSFER_LIMITS
    files_out: TransferLimits = DEFAULT_TRANSFER_LIMITS
    outputs_named_at_call_time: bool = False
    egress: Egress = Egress.CLOSED
    requires_os_family: Optional[OsFamily] = None
    host_tools: object = None
    isolation_scope: IsolationScope = IsolationScope.CONVERSATION

    def __post_init__(self) -> None:
        object.__setattr__(self, "egress", Egress(str(self.egress)))
        object.__setattr__(self, "isolation_scope", IsolationScope(str(self.isolation_scope)))
        if self.egress_allow and self.egress is not Egress.ALLOWLIST:
            raise ValueError("egress_allow names hosts but egress is not 'allowlist'")
        if self.host_tools is not None and Capability.HOST_TOOLS not in self.requires:
            raise ValueError("host_tools set but requires lacks 'host_tools'")


@dataclass(frozen=True)
class BackendDeclarations:
    capabilities: FrozenSet[Capability] = DEFAULT_CAPABILITIES
    limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS
    egress_modes: FrozenSet[Egress] = frozenset()
    os_families: FrozenSet[OsFamily] = frozenset()
    isolation_scopes: FrozenSet[IsolationScope] = frozenset({IsolationScope.CONVERSATION})
    observes_egress: bool = False


@dataclass(frozen=True)
class ExecResult:
    """Built from bytes; the byte fields are authoritative, the text views decode
    with replacement characters."""

    stdout_bytes: bytes
    stderr_bytes: bytes = b""
    exit_code: int = 0
    producer_owns_stderr: bool = False

    @property
    def stdout_text(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def stdout(self) -> str:
        return self.stdout_text

    @property
    def stderr(self) -> str:
        return self.stderr_text

    @classmethod
    def from_text(
        cls, stdout: str, stderr: str = "", exit_code: int = 0, producer_owns_stderr: bool = False
    ) -> "ExecResult":
        """The text-only constructor: strings encoded as strict UTF-8."""
        return cls(stdout.encode("utf-8"), stderr.encode("utf-8"), exit_code, producer_owns_stderr)


@dataclass(frozen=True)
class SandboxEntry:
    path: str
    kind: EntryKind
    size_bytes: Optional[int] = None


DisposalCode = Literal["unreachable", "timeout", "refused", "unlisted", "unknown"]
_PRECEDENCE: Tuple[str, ...] = ("unreachable", "timeout", "refused", "unlisted", "unknown")


@dataclass(frozen=True)
class DisposalFailure:
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


def fold_disposal_failures(failures: Sequence[DisposalFailure]) -> Optional[DisposalFailure]:
    if not failures:
        return None
    codes = {f.code for f in failures}
    worst = next((c for c in _PRECEDENCE if c in codes), "unknown")
    if len(failures) == 1:
        only = failures[0]
        return only if only.code == worst else DisposalFailure(worst, only.detail)
    return DisposalFailure(worst, "; ".join(f.detail for f in failures))


@dataclass(frozen=True)
class ScopePurge:
    disposed: int = 0
    undisposed: Optional[DisposalFailure] = None


# ---- error classes (router and backend), with their built-in bases ----------


class SandboxCapabilityNotSupported(RuntimeError):
    pass


class SandboxOsFamilyNotSupported(RuntimeError):
    pass


class SandboxTransferLimitsNotPermitted(PermissionError):
    pass


class SandboxEgressNotEnforced(PermissionError):
    pass


class SandboxOutputError(RuntimeError):
    pass


class SandboxTransferCapExceeded(SandboxOutputError):
    pass


# ---- the protocols ---------------------------------------------------------------


@runtime_checkable
class Sandbox(Protocol):
    async def write_file(self, path: str, content: Union[str, bytes], *, working_directory: str) -> None: ...

    async def exec(
        self, command: Union[str, Sequence[str]], *, working_directory: str, timeout: float
    ) -> ExecResult: ...

    async def run_code(self, code: str, *, timeout: float) -> ExecResult: ...

    async def stat_file(self, path: str, *, working_directory: str) -> Optional[SandboxEntry]: ...

    async def read_file(self, path: str, *, working_directory: str, max_bytes: int) -> bytes: ...

    async def remove(self, path: str, *, working_directory: str, recursive: bool = False) -> None: ...

    async def reclaim(self, directory: str, *, working_directory: str, timeout: float) -> None: ...

    async def list_dir(self, path: str, *, working_directory: str) -> Tuple[SandboxEntry, ...]: ...


@runtime_checkable
class SandboxBackend(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def isolation(self) -> Isolation: ...

    async def acquire(self, key: SandboxKey, spec: SandboxSpec) -> Sandbox: ...

    async def dispose(self, key: SandboxKey, *, kind: Optional[str] = None) -> Optional[DisposalFailure]: ...

    async def dispose_scope(self, scope: str, thread_id: str) -> ScopePurge: ...
