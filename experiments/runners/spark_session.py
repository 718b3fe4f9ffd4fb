"""Spark sessions for stackcast: environment, quiet JVM, retries, shipped code.

Everything that touches pyspark's start-up lives here, inside functions (no
module-global session); :func:`spark_session` is the one way in.

Environment (set before the driver JVM starts)
    * ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` default to the running
      interpreter, so Python workers use the same environment as the driver
      (``setdefault``: a value set by the user or by ``spark-submit`` wins).
    * ``SPARK_LOCAL_IP`` defaults to ``127.0.0.1`` for ``local`` masters, which
      avoids the "hostname resolves to a loopback address" warning and keeps
      the embedded engine off the network.
    * Java 17+ must be on ``PATH`` or under ``JAVA_HOME``; otherwise
      :class:`SparkUnavailableError` carries one line saying what to install.
      It subclasses :class:`FileNotFoundError` (a missing executable), so the
      CLI reports it as one line with exit code 2.

Quiet JVM
    The driver JVM gets a log4j2 configuration at level ERROR (with an
    explicit ``org.apache.spark`` logger, which Spark takes as a custom
    configuration, so it does not print "Setting default log level"), the console
    progress bar is off (the runner draws its own), the web UI is off, and
    the one line every Spark 4 JVM prints about ``jdk.incubator.vector`` is
    filtered out of the JVM's stderr; every other line is passed through.

Retries
    Plain ``local[N]`` never retries a failed task. Local masters are rewritten
    to the ``local[N,F]`` form (``F`` = ``max_failures``, default 4), and
    ``spark.task.maxFailures`` is set for cluster masters, so a cell that
    fails transiently is run again.

Shipped code
    The project's packages (``topologies``, ``strategies``, ``sim``,
    ``experiments``, ``hil``) are zipped from where this interpreter imports
    them (package data such as ``experiments/specs/*.toml`` included,
    ``__pycache__`` excluded) and added with ``SparkContext.addPyFile``. A
    standalone, YARN or Kubernetes cluster therefore needs only the
    third-party dependencies (numpy, networkx, pyarrow, simpy, ...) on its
    workers. The zip is named by the SHA-256 of its content and cached in the
    temporary directory, so it is built once per code version and added once
    per SparkContext.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

JAVA_HINT = ("Java 17+ is required for the Spark runner: apt-get install "
             "openjdk-17-jre-headless (or use --runner local)")
PYSPARK_HINT = ("pyspark is required for the Spark runner: pip install 'stackcast[spark]' "
                "(or use --runner local)")
PACKAGES = ("topologies", "strategies", "sim", "experiments", "hil")
DEFAULT_MASTER = "local[*]"
DEFAULT_MAX_FAILURES = 4
# Lines the JVM prints on every start that say nothing to a user.
_JVM_NOISE = ("WARNING: Using incubator modules",)
_LOG4J2 = """\
# stackcast: quiet driver JVM (errors only)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


class SparkUnavailableError(FileNotFoundError):
    """Java or pyspark is missing, or the master cannot be used; the message
    (one line) says what to install or fix."""


#: Seconds to wait for a TCP connection to each address of a ``spark://`` master.
MASTER_CONNECT_TIMEOUT_S = 5.0
#: Seconds a ``spark://`` master gets, from the start of the session, to accept
#: the application (Spark alone waits 3 x 20 s for an unresponsive master); with
#: the interpreter's start before and the JVM's stop after, the command reports a
#: silent master within 15 s.
MASTER_TIMEOUT_S = 12.0
#: Master URL forms Spark accepts (``local``, ``local[N]``, ``local[N,F]``,
#: ``local-cluster[...]``, ``spark://``, ``yarn``, ``k8s://``).
_MASTER_FORMS = re.compile(r"local(\[[^\]]+\])?|local-cluster\[[^\]]+\]|spark://.+|yarn|k8s://.+")


# -- prerequisites ------------------------------------------------------------------

def find_java() -> str:
    """Path of the ``java`` executable (``JAVA_HOME`` first, then ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if not found:
        raise SparkUnavailableError(JAVA_HINT)
    return found


def java_major_version(java: str) -> int | None:
    """Major version reported by ``java -version`` (None if it cannot be read)."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def require_spark() -> None:
    """Raise :class:`SparkUnavailableError` unless pyspark and Java 17+ are present."""
    if importlib.util.find_spec("pyspark") is None:
        raise SparkUnavailableError(PYSPARK_HINT)
    java = find_java()
    major = java_major_version(java)
    if major is not None and major < 17:
        raise SparkUnavailableError(f"{JAVA_HINT}; found Java {major} at {java}")


# -- masters and environment --------------------------------------------------------

def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def with_local_retries(master: str, max_failures: int = DEFAULT_MAX_FAILURES) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` -> ``local[N,F]`` so failed tasks are retried.

    Other masters (and ``local[N,F]`` given explicitly) are returned unchanged.
    """
    if master == "local":
        return f"local[1,{max_failures}]"
    m = re.fullmatch(r"local\[(\*|\d+)\]", master)
    return f"local[{m.group(1)},{max_failures}]" if m else master


def check_master(master: str, timeout_s: float = MASTER_CONNECT_TIMEOUT_S) -> None:
    """Refuse a master URL Spark cannot use, quickly and in one line.

    An unknown form is refused with the forms Spark accepts. A ``spark://``
    master (``spark://host:port``, or several ``host:port`` separated by
    commas for standby masters) must accept a TCP connection on at least
    one address within ``timeout_s`` each; Spark itself would retry for
    about a minute and then print a page of Py4J errors.

    Raises
    ------
    SparkUnavailableError
        Naming the URL and the cause.
    """
    if not _MASTER_FORMS.fullmatch(master):
        raise SparkUnavailableError(
            f"unknown Spark master URL {master!r}: expected local[N], spark://HOST:PORT, "
            "yarn or k8s://URL")
    if not master.startswith("spark://"):
        return
    errors = []
    for address in master[len("spark://"):].split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise SparkUnavailableError(f"Spark master URL {master!r}: expected "
                                        f"spark://HOST:PORT, got {address!r}")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc.strerror or exc}")
    raise SparkUnavailableError(f"Spark master {master} is unreachable ({'; '.join(errors)})")


def configure_environment(master: str) -> None:
    """Set the environment the driver JVM and the Python workers inherit."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _cache_dir() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"stackcast-spark-{uid}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_once(path: Path, data: bytes) -> Path:
    if not path.is_file() or path.read_bytes() != data:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def log4j2_config() -> Path:
    """A log4j2 properties file that keeps the driver JVM at level ERROR."""
    return _write_once(_cache_dir() / "log4j2-stackcast.properties", _LOG4J2.encode())


# -- the code zip -------------------------------------------------------------------

def _package_dir(name: str) -> Path | None:
    """Where package ``name`` is installed: beside this package, else via its import spec.

    The sibling directory comes first because a mere namespace package of the
    same name earlier on ``sys.path`` (a ``tests/experiments`` folder) must not win.
    """
    candidates = [Path(__file__).resolve().parents[2] / name]
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) for p in spec.submodule_search_locations]
    return next((c for c in candidates if (c / "__init__.py").is_file()), None)


def _package_files(packages: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(name inside the zip, file) for every file of the importable ``packages``."""
    files: list[tuple[str, Path]] = []
    for name in packages:
        root = _package_dir(name)
        if root is None:
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if (not path.is_file() or path.suffix in (".pyc", ".pyo")
                    or any(part == "__pycache__" or part.startswith(".") for part in rel.parts)):
                continue
            files.append(((Path(name) / rel).as_posix(), path))
    return files


def build_code_zip(packages: tuple[str, ...] = PACKAGES, dest: Path | None = None) -> Path:
    """Zip ``packages`` from their installed location; the name is the content hash."""
    files = _package_files(packages)
    if not files:
        raise FileNotFoundError(f"none of the packages {', '.join(packages)} is importable")
    digest = hashlib.sha256()
    blobs = []
    for arcname, path in files:
        data = path.read_bytes()
        blobs.append((arcname, data))
        digest.update(arcname.encode() + b"\0" + hashlib.sha256(data).digest())
    target = (dest or _cache_dir()) / f"stackcast-code-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in blobs:
            info = zipfile.ZipInfo(arcname, date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    os.replace(tmp, target)
    return target


def ship_code(sc: Any) -> Path:
    """Add the code zip to ``sc`` (once per SparkContext); returns the zip's path."""
    path = build_code_zip()
    if path.name not in getattr(sc, "_python_includes", []):
        sc.addPyFile(str(path))
        # addPyFile also puts Spark's copy of the zip on the driver's sys.path; the driver
        # already imports the installed code, and the copy vanishes when the context stops.
        sys.path[:] = [p for p in sys.path if not p.endswith(os.sep + path.name)]
        importlib.invalidate_caches()
        log.info("shipped %s to the executors", path.name)
    return path


# -- the session ----------------------------------------------------------------------

class _JvmStderr:
    """The driver JVM's stderr, read by a thread from a pipe made before the JVM starts.

    Until :meth:`pass_through` the lines are kept (a JVM that exits at start
    explains why there); afterwards they are copied to ours minus the
    start-up noise, until :meth:`mute` (after Ctrl-C, when executors only
    report their interrupted workers).
    """

    def __init__(self) -> None:
        read_fd, self.write_fd = os.pipe()
        self._lines: deque[str] = deque(maxlen=400)
        self._passing = False
        self._muted = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(read_fd,),
                                        name="spark-jvm-stderr", daemon=True)
        self._thread.start()

    def _run(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as stream:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="replace")
                if any(noise in line for noise in _JVM_NOISE):
                    continue
                with self._lock:
                    if not self._passing:
                        self._lines.append(line)
                    elif not self._muted:
                        _write_stderr(line)

    def close_writer(self) -> None:
        """Close this process's copy of the pipe's write end (the JVM holds its own)."""
        try:
            os.close(self.write_fd)
        except OSError:
            pass

    def pass_through(self) -> None:
        with self._lock:
            for line in self._lines:
                _write_stderr(line)
            self._lines.clear()
            self._passing = True

    def mute(self) -> None:
        with self._lock:
            self._muted = True

    def cause(self, wait_s: float = 2.0) -> str:
        """The JVM's reason for exiting: its first exception or error line."""
        self._thread.join(wait_s)  # the JVM has exited: its stderr ends soon
        with self._lock:
            lines = [ln.strip() for ln in self._lines if ln.strip()]
        for line in lines:
            m = re.search(r"(?:Exception|Error)\b[^:]*:\s*(.+)", line)
            if m:
                return m.group(1)
        return lines[-1] if lines else "no output"


def _write_stderr(line: str) -> None:
    out = sys.__stderr__
    if out is None:
        return
    try:
        out.write(line)
        out.flush()
    except (OSError, ValueError):
        pass


def _launch_gateway(conf: Any, master: str) -> Any:
    """Start the driver JVM with its stderr filtered (pyspark's ``popen_kwargs`` hook).

    Raises
    ------
    SparkUnavailableError
        If the JVM exits at start; one line with its cause (e.g. "Could not
        parse Master URL").
    """
    from pyspark.java_gateway import launch_gateway

    jvm_stderr = _JvmStderr()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": jvm_stderr.write_fd})
    except Exception as exc:  # noqa: BLE001 - pyspark's JAVA_GATEWAY_EXITED and the like
        jvm_stderr.close_writer()
        raise SparkUnavailableError(f"Spark could not start (master {master}): "
                                    f"{jvm_stderr.cause() if 'EXITED' in str(exc) else exc}"
                                    ) from None
    jvm_stderr.close_writer()
    gateway.stackcast_stderr = jvm_stderr  # passed through once the SparkContext runs
    return gateway


def _jvm_stderr() -> _JvmStderr | None:
    """The stderr reader of a JVM this process started (None under spark-submit,
    whose py4j gateway answers every attribute with a Java member)."""
    from pyspark import SparkContext

    stderr = getattr(SparkContext._gateway, "stackcast_stderr", None)
    return stderr if isinstance(stderr, _JvmStderr) else None


@contextmanager
def _deadline(seconds: float, message: str) -> Iterator[None]:
    """Raise :class:`SparkUnavailableError` (``message``) if the block outlasts ``seconds``.

    A SIGALRM timer interrupts a blocking Py4J call (which may wrap the
    exception in its own; the message wins either way); only in the main
    thread (elsewhere the block simply runs).
    """
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return
    fired = []

    def on_alarm(signum: int, frame: Any) -> None:
        fired.append(signum)
        raise SparkUnavailableError(message)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.1))
    try:
        yield
    except Exception:
        if fired:
            raise SparkUnavailableError(message) from None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _start_context(conf: Any, master: str, started: float, timeout_s: float) -> Any:
    """``SparkContext(conf)``, its failures as one :class:`SparkUnavailableError` line."""
    from pyspark import SparkContext

    # Leave ~3 s of the budget for the interpreter's start and the shutdown.
    remaining = timeout_s - 3.0 - (time.monotonic() - started)
    limit = _deadline(remaining, f"Spark master {master} did not accept the application "
                                 f"within {timeout_s:g} s (is it a Spark master, and "
                                 "reachable from here?)") \
        if master.startswith("spark://") else nullcontext()
    try:
        with limit:
            sc = SparkContext(conf=conf)
    except SparkUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError and the like: one line
        java = getattr(exc, "java_exception", None)
        cause = str(java.getMessage()) if java is not None else str(exc).splitlines()[0]
        raise SparkUnavailableError(f"Spark could not start (master {master}): {cause}"
                                    ) from None
    stderr = _jvm_stderr()
    if stderr is not None:
        stderr.pass_through()
    return sc


class _DropPy4jRecords(logging.Filter):
    """Drop log records py4j writes (often through the root logger, with a
    traceback) when a call is interrupted or the JVM goes away."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


def _mute_jvm() -> None:
    stderr = _jvm_stderr()
    if stderr is not None:
        stderr.mute()


def _active_session() -> Any | None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        return None
    return SparkSession.builder.getOrCreate()


@contextmanager
def spark_session(master: str | None = DEFAULT_MASTER, *, app_name: str = "stackcast",
                  max_failures: int = DEFAULT_MAX_FAILURES,
                  conf: Mapping[str, str] | None = None,
                  master_timeout_s: float = MASTER_TIMEOUT_S) -> Iterator[Any]:
    """A configured ``SparkSession`` with the project's code shipped; stopped on exit.

    Parameters
    ----------
    master
        Master URL (``local[*]``, ``local[2]``, ``spark://host:7077``, ``yarn``,
        ``k8s://...``). ``None`` takes the master from ``spark-submit`` (or
        ``spark-defaults.conf``) and falls back to ``local[*]``.
    max_failures
        Attempts per task before the job fails (``local[N,F]`` for local masters,
        ``spark.task.maxFailures`` otherwise).
    conf
        Extra Spark settings, applied last.
    master_timeout_s
        A ``spark://`` master must accept the application within this many
        seconds of the call (a TCP probe first, then registration);
        otherwise :class:`SparkUnavailableError` names the URL.

    If a SparkContext is already running in this process (a notebook, a test
    fixture), it is used as is, with the code shipped to it, and left running.
    """
    started = time.monotonic()
    require_spark()
    if master:
        check_master(master)
    existing = _active_session()
    if existing is not None:
        wanted = master and with_local_retries(master, max_failures)
        actual = existing.sparkContext.master
        if wanted and wanted not in (actual, master):
            log.warning("using the running SparkContext (master %s), not %s", actual, master)
        ship_code(existing.sparkContext)
        yield existing
        return

    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    configure_environment(master or "")
    if SparkContext._gateway is None:
        if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its JVM is running
            SparkContext._ensure_initialized()
        else:  # start the driver JVM quietly; --conf values become its system properties
            boot = SparkConf(loadDefaults=False).set(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile=file:{log4j2_config()}")
            if master:
                boot.setMaster(with_local_retries(master, max_failures))
            SparkContext._ensure_initialized(gateway=_launch_gateway(boot, master or "default"))
    # Backed by the JVM: holds what spark-submit / spark-defaults.conf set (the master, too).
    spark_conf = SparkConf()
    resolved = with_local_retries(master or spark_conf.get("spark.master", None)
                                  or DEFAULT_MASTER, max_failures)
    spark_conf.setMaster(resolved).setAppName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.task.maxFailures": str(max_failures),
        "spark.sql.session.timeZone": "UTC",
        "spark.python.worker.reuse": "true",
    }
    for key, value in {**settings, **(conf or {})}.items():
        spark_conf.set(key, value)
    log.info("starting Spark (master %s)", resolved)
    quiet = _DropPy4jRecords()
    logging.getLogger().addFilter(quiet)  # py4j's logging.exception(...) calls
    py4j_log = logging.getLogger("py4j")  # and its own loggers
    py4j_level = py4j_log.level
    py4j_log.setLevel(logging.CRITICAL + 1)
    try:
        sc = _start_context(spark_conf, resolved, started, master_timeout_s)
        try:
            sc.setLogLevel("ERROR")
            spark = SparkSession.builder.getOrCreate()
            ship_code(sc)
            yield spark
        except KeyboardInterrupt:
            _mute_jvm()  # executors now only report their interrupted Python workers
            raise
        finally:
            sc.stop()
    finally:
        logging.getLogger().removeFilter(quiet)
        py4j_log.setLevel(py4j_level)
