// glassroom's Java kernel, the JVM's half (javakernel.py is the other):
// run by the kernel as `java [options] <private dir>/JShellKernel.java
// REQUEST_FD REPLY_FD` (source-file mode: compiled in memory at start).
//
// One JShell with the local execution engine evaluates every cell in this
// JVM, so a cell's code shares the JVM with the kernel's side: there is no
// second JVM. Imports, variables, methods and classes carry over from cell
// to cell.
//
// Descriptors: standard input is /dev/null; standard output and error are
// plain pipes the kernel drains all the time (System.out, System.err,
// native writes and child processes that inherit them all stream as the
// cell runs). Requests come on REQUEST_FD and replies go on REPLY_FD, two
// more pipes, in frames: a 4-byte big-endian length, then that many bytes
// of UTF-8 JSON (one object with a "type"). A cell's code runs in this JVM
// and can write to any descriptor, so the kernel trusts nothing it reads.
//
// Threads:
//  - main: takes requests from a queue and answers them one by one:
//    "execute" (id, code, cell: the execution count), "complete" (id,
//    code: the text before the cursor), "is_complete" (id, code),
//    "shutdown". A cell is split into snippets with analyzeCompletion and
//    evaluated snippet by snippet; it stops at the first error. Before
//    each reply System.out and System.err are flushed, so the cell's
//    output is in the pipes before the reply is in its own.
//  - control: reads every request frame. "interrupt" (id: the cell)
//    calls jshell.stop(), which in JDK 17 stops the snippet's thread group
//    (ThreadDeath), from a thread of its own that tries again for a moment
//    (a stop while JShell still compiles the snippet does nothing), and
//    the cell runs none of its later snippets; "ack" (id, error) answers a
//    display; the rest goes to main's queue. At the end of the requests
//    (the kernel is gone) the JVM halts.
//  - writer: writes the reply frames, so a frame is never cut in two by
//    a ThreadDeath landing in the snippet thread that asked for it.
//
// Replies: "hello" (version, vm) once JShell is ready; "reply" (id and,
// for a cell, status "ok" with value, the value of the last snippet when
// it is an expression, or status "error" with ename, evalue, traceback;
// for a completion, matches and anchor; for is_complete, status);
// "display" (id, mime, data in base64, text: whether it was given as a
// String), which waits for the kernel's "ack" so the display lands
// between the output before and after it.
//
// Rich output: cells call display(mime, String), display(mime, byte[]),
// html(String) and markdown(String), methods defined at start as JShell
// snippets. Snippets see only the JDK's classes (their class loader's
// parent is the application class loader; this file's classes live in the
// source launcher's loader), so the helpers reach the kernel through the
// system properties object: at start it is replaced by a copy that also
// implements BiConsumer<String, Object> (Hook). No foreign value is stored
// in the properties, so Properties.list and store keep working. The hook
// is also a Supplier of the names of the variables the cells have defined
// (kept after each cell by the main thread), which tests and tools read:
// ((Supplier<Set<String>>) (Object) System.getProperties()).get().
//
// At start every environment variable is also copied into the system
// properties (as E2B does for Java), unless a property of that name is
// set, after JShell is built, so no variable steers JShell.
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;

import jdk.jshell.DeclarationSnippet;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.MethodSnippet;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;

public final class JShellKernel {
    // The largest request frame read (a cell's code, as JSON).
    static final int REQUEST_MAX = 128 << 20;
    static final int DISPLAY_MAX = 10 << 20;
    // Characters of a cell's value that are sent; the rest is cut.
    static final int VALUE_MAX = 1 << 20;
    // Bounds of an error: characters of its message, lines of its trace.
    static final int TEXT_MAX = 64 << 10;
    static final int TRACE_MAX = 200;
    static final int COMPLETIONS_MAX = 1000;
    // How long display waits for the kernel to have shown the data.
    static final long DISPLAY_WAIT_SECONDS = 60;
    // An interrupt stops the cell every STOP_EVERY_MS while it runs, up to
    // STOP_TRIES times (the kernel asks again after its grace).
    static final int STOP_TRIES = 15;
    static final long STOP_EVERY_MS = 100;

    // What jshell's DEFAULT start-up imports.
    static final String[] IMPORTS = {
        "java.io.*", "java.math.*", "java.net.*", "java.nio.file.*", "java.util.*",
        "java.util.concurrent.*", "java.util.function.*", "java.util.prefs.*",
        "java.util.regex.*", "java.util.stream.*",
    };
    static final String HOOK = "((java.util.function.BiConsumer<String, Object>) glassroom$hook())";
    static final String[] HELPERS = {
        "java.util.function.BiConsumer<?, ?> glassroom$hook() { Object h = System.getProperties(); "
            + "if (!(h instanceof java.util.function.BiConsumer)) throw new IllegalStateException(\"display: the kernel's hook is gone "
            + "(System.setProperties replaced the system properties)\"); return (java.util.function.BiConsumer<?, ?>) h; }",
        "void display(String mime, String data) { " + HOOK + ".accept(mime, data); }",
        "void display(String mime, byte[] data) { " + HOOK + ".accept(mime, data); }",
        "void html(String html) { display(\"text/html\", html); }",
        "void markdown(String markdown) { display(\"text/markdown\", markdown); }",
    };

    final DataInputStream requests;
    final OutputStream replies;
    final PrintStream out = System.out;
    final PrintStream err = System.err;
    final BlockingQueue<byte[]> outbox = new LinkedBlockingQueue<>();
    final BlockingQueue<Map<String, Object>> work = new LinkedBlockingQueue<>();
    final Map<Long, CompletableFuture<String>> displays = new ConcurrentHashMap<>();
    final AtomicLong displayIds = new AtomicLong();
    final Object displayLock = new Object();
    // Where each snippet came from ("cell 3, line 2"), for tracebacks.
    final Map<String, int[]> origins = new ConcurrentHashMap<>();
    JShell jshell;
    // The cell being run (changed under cellLock), and the last cell an
    // interrupt was asked for.
    final Object cellLock = new Object();
    volatile long running = -1;
    volatile long stopFor = -1;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JShellKernel REQUEST_FD REPLY_FD");
            System.exit(2);
        }
        InputStream in = new FileInputStream("/dev/fd/" + Integer.parseInt(args[0]));
        OutputStream rep = new FileOutputStream("/dev/fd/" + Integer.parseInt(args[1]));
        new JShellKernel(in, rep).serve();
    }

    JShellKernel(InputStream in, OutputStream rep) {
        requests = new DataInputStream(new BufferedInputStream(in, 1 << 16));
        replies = rep;
    }

    void serve() {
        try {
            daemon("glassroom-writer", this::writer);
            jshell = JShell.builder()
                .executionEngine("local")
                .in(InputStream.nullInputStream())
                .out(out)
                .err(err)
                .build();
            for (String i : IMPORTS) {
                startup("import " + i + ";");
            }
            for (String h : HELPERS) {
                startup(h);
            }
            Hook hook = new Hook(this);
            hook.putAll(System.getProperties());
            System.setProperties(hook);
            System.getenv().forEach(hook::putIfAbsent);
            daemon("glassroom-control", this::control);
            Map<String, Object> hello = new LinkedHashMap<>();
            hello.put("type", "hello");
            hello.put("version", System.getProperty("java.version"));
            hello.put("vm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"));
            send(hello);
            for (;;) {
                answer(work.take());
            }
        } catch (Throwable t) {
            err.println("[glassroom] the Java kernel failed: " + t);
            err.flush();
        } finally {
            // A kernel without its main thread answers nothing: end.
            flushStreams();
            Runtime.getRuntime().halt(70);
        }
    }

    // The names of the variables the cells defined, active now: the hook's
    // Supplier side. Main thread only (JShell is not thread-safe).
    final Set<String> variableNames = ConcurrentHashMap.newKeySet();

    void keepVariableNames() {
        try {
            Set<String> now = jshell.variables().filter(v -> jshell.status(v).isActive()).map(v -> v.name())
                .collect(Collectors.toSet());
            variableNames.retainAll(now);
            variableNames.addAll(now);
        } catch (RuntimeException e) {
            // the JShell state is gone with its engine: the next cell says so
        }
    }

    void startup(String code) {
        for (SnippetEvent e : jshell.eval(code)) {
            if (e.causeSnippet() == null) {
                // Cell 0: shown as the kernel's in tracebacks.
                origins.put(e.snippet().id(), new int[] {0, 1});
                if (e.status() != Snippet.Status.VALID) {
                    err.println("[glassroom] a start-up snippet failed: " + code);
                }
            }
        }
    }

    static void daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    // ---- requests and replies

    void control() {
        try {
            for (;;) {
                int n;
                try {
                    n = requests.readInt();
                } catch (EOFException e) {
                    break;
                }
                if (n < 0 || n > REQUEST_MAX) {
                    err.println("[glassroom] a request frame of " + n + " bytes: the kernel's pipe is broken");
                    break;
                }
                byte[] b = requests.readNBytes(n);
                if (b.length != n) {
                    break;
                }
                Map<String, Object> r;
                try {
                    Object v = Json.parse(new String(b, StandardCharsets.UTF_8));
                    if (!(v instanceof Map)) {
                        continue;
                    }
                    r = asMap(v);
                } catch (IllegalArgumentException e) {
                    continue;
                }
                switch (str(r.get("type"))) {
                    case "interrupt":
                        long id = num(r.get("id"));
                        stopFor = id;
                        if (running == id) {
                            daemon("glassroom-stop", () -> stop(id));
                        }
                        break;
                    case "ack":
                        CompletableFuture<String> f = displays.get(num(r.get("id")));
                        if (f != null) {
                            f.complete(str(r.get("error")));
                        }
                        break;
                    default:
                        work.add(r);
                }
            }
        } catch (IOException | RuntimeException e) {
            // The kernel is gone, or its pipe was tampered with.
        } catch (Throwable t) {
            // Out of memory, or stopped by a cell: no interrupt could
            // reach the cell any more, and the kernel starts another JVM.
            Runtime.getRuntime().halt(71);
        }
        // No more requests: the kernel is gone or shut down.
        flushStreams();
        Runtime.getRuntime().halt(0);
    }

    // Stops the cell's snippet, again for a moment while the cell runs:
    // jshell.stop() does nothing while JShell still compiles the snippet.
    void stop(long id) {
        for (int i = 0; i < STOP_TRIES; i++) {
            try {
                // Under cellLock: a stop never lands in the next cell.
                synchronized (cellLock) {
                    if (running != id) {
                        return;
                    }
                    jshell.stop();
                }
                Thread.sleep(STOP_EVERY_MS);
            } catch (RuntimeException | InterruptedException e) {
                return;
            }
        }
    }

    void writer() {
        try {
            for (;;) {
                byte[] frame = outbox.take();
                replies.write(frame);
                replies.flush();
            }
        } catch (IOException | InterruptedException e) {
            // The kernel is gone.
        } catch (Throwable t) {
            // As in control: no reply could be sent any more.
            Runtime.getRuntime().halt(72);
        }
        Runtime.getRuntime().halt(0);
    }

    void send(Map<String, Object> msg) {
        byte[] payload = Json.write(msg).getBytes(StandardCharsets.UTF_8);
        byte[] frame = new byte[4 + payload.length];
        int n = payload.length;
        frame[0] = (byte) (n >>> 24);
        frame[1] = (byte) (n >>> 16);
        frame[2] = (byte) (n >>> 8);
        frame[3] = (byte) n;
        System.arraycopy(payload, 0, frame, 4, n);
        outbox.add(frame);
    }

    void flushStreams() {
        // A cell may have replaced System.out and System.err.
        System.out.flush();
        System.err.flush();
        out.flush();
        err.flush();
    }

    void answer(Map<String, Object> r) {
        long id = num(r.get("id"));
        Map<String, Object> reply;
        try {
            switch (str(r.get("type"))) {
                case "execute":
                    reply = execute(id, str(r.get("code")), num(r.get("cell")));
                    break;
                case "complete":
                    reply = complete(str(r.get("code")));
                    break;
                case "is_complete":
                    reply = isComplete(str(r.get("code")));
                    break;
                case "shutdown":
                    flushStreams();
                    Runtime.getRuntime().halt(0);
                    return;
                default:
                    return;
            }
        } catch (OutOfMemoryError e) {
            reply = error(e.getClass().getName(), e.getMessage() + " (in JShell, running the cell: the heap is full;"
                + " set large variables to null, or restart the kernel)", List.of());
        } catch (RuntimeException | StackOverflowError e) {
            reply = error("JavaKernelError", "the Java kernel failed: " + e, List.of(e.toString()));
        }
        flushStreams();
        if ("execute".equals(str(r.get("type")))) {
            keepVariableNames();
        }
        reply.put("type", "reply");
        reply.put("id", id);
        send(reply);
    }

    // ---- cells

    Map<String, Object> execute(long id, String code, long cell) {
        synchronized (cellLock) {
            running = id;
        }
        try {
            return run(id, code, cell);
        } finally {
            synchronized (cellLock) {
                running = -1;
            }
        }
    }

    Map<String, Object> run(long id, String code, long cell) {
        SourceCodeAnalysis sca = jshell.sourceCodeAnalysis();
        String rest = code;
        String value = null;
        while (!rest.isBlank()) {
            if (stopFor == id) {
                return interrupted();
            }
            SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
            String src;
            String next;
            switch (ci.completeness()) {
                case EMPTY:
                    src = null;
                    next = "";
                    break;
                case COMPLETE:
                case COMPLETE_WITH_SEMI:
                    src = ci.source();
                    next = ci.remaining();
                    break;
                case UNKNOWN:
                    src = ci.source() == null || ci.source().isBlank() ? rest : ci.source();
                    next = ci.remaining() == null ? "" : ci.remaining();
                    break;
                default:
                    // Incomplete to the end of the cell: javac says what is missing.
                    src = rest;
                    next = "";
            }
            if (src == null) {
                break;
            }
            int start = code.length() - rest.length() + locate(rest, src);
            value = null;
            List<SnippetEvent> events = jshell.eval(src);
            if (events.isEmpty()) {
                // javac failed inside JShell (it said why on stderr), most
                // often for want of heap.
                flushStreams();
                return error("JShellError", "JShell could not evaluate the code at line " + lineOf(code, start)
                    + " (its compiler failed: see stderr; a full heap is the usual cause: set large variables to null, or restart the kernel)",
                    List.of());
            }
            for (SnippetEvent e : events) {
                if (e.causeSnippet() == null) {
                    origins.put(e.snippet().id(), new int[] {(int) cell, lineOf(code, start)});
                }
            }
            for (SnippetEvent e : events) {
                if (e.causeSnippet() != null) {
                    continue;
                }
                if (stopFor == id) {
                    return interrupted();
                }
                Snippet s = e.snippet();
                if (e.exception() != null) {
                    return exception(e.exception());
                }
                switch (e.status()) {
                    case REJECTED:
                        return compileError(s, code, start);
                    case RECOVERABLE_DEFINED:
                    case RECOVERABLE_NOT_DEFINED:
                        String why = unresolved(s);
                        if (s.kind() == Snippet.Kind.VAR) {
                            return error("UnresolvedReferenceException", why, List.of("UnresolvedReferenceException: " + why));
                        }
                        err.println("warning: " + why);
                        break;
                    case VALID:
                        if (s.subKind() == Snippet.SubKind.VAR_VALUE_SUBKIND || s.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND) {
                            value = e.value();
                            // A String is shown as itself, as Java kernels
                            // (IJava, E2B's) show it, not as JShell's
                            // quoted literal.
                            if (s instanceof jdk.jshell.VarSnippet vs && "String".equals(vs.typeName())) {
                                value = unquote(value);
                            }
                        }
                        break;
                    default:
                        break;
                }
            }
            if (next.length() >= rest.length()) {
                break;
            }
            rest = next;
        }
        if (stopFor == id) {
            return interrupted();
        }
        Map<String, Object> ok = new LinkedHashMap<>();
        ok.put("status", "ok");
        if (value != null && value.length() > VALUE_MAX) {
            value = value.substring(0, VALUE_MAX) + "\n[glassroom: the value was cut at " + VALUE_MAX + " of its " + value.length() + " characters]";
        }
        ok.put("value", value);
        return ok;
    }

    // unquote reads a Java string literal as JShell shows a String value
    // ("a\tb"); anything else is returned as it is (null).
    static String unquote(String v) {
        if (v == null || v.length() < 2 || v.charAt(0) != '"' || v.charAt(v.length() - 1) != '"') {
            return v;
        }
        StringBuilder b = new StringBuilder(v.length());
        for (int i = 1; i < v.length() - 1; i++) {
            char c = v.charAt(i);
            if (c != '\\' || i + 1 >= v.length() - 1) {
                b.append(c);
                continue;
            }
            char n = v.charAt(++i);
            switch (n) {
                case 'b' -> b.append('\b');
                case 't' -> b.append('\t');
                case 'n' -> b.append('\n');
                case 'f' -> b.append('\f');
                case 'r' -> b.append('\r');
                case 's' -> b.append(' ');
                case 'u' -> {
                    if (i + 4 <= v.length() - 2) {
                        try {
                            b.append((char) Integer.parseInt(v.substring(i + 1, i + 5), 16));
                            i += 4;
                        } catch (NumberFormatException e) {
                            b.append("\\u");
                        }
                    } else {
                        b.append("\\u");
                    }
                }
                default -> {
                    if (n >= '0' && n <= '7') {
                        int end = i, code = 0;
                        while (end < v.length() - 1 && end < i + 3 && v.charAt(end) >= '0' && v.charAt(end) <= '7') {
                            code = code * 8 + (v.charAt(end) - '0');
                            end++;
                        }
                        b.append((char) code);
                        i = end - 1;
                    } else {
                        b.append(n); // \" \' \\
                    }
                }
            }
        }
        return b.toString();
    }

    // Where src (which analyzeCompletion may have trimmed, or ended with a
    // ';' it added) begins in rest.
    static int locate(String rest, String src) {
        String head = src.strip();
        head = head.substring(0, Math.min(head.length(), 32));
        int at = head.isEmpty() ? -1 : rest.indexOf(head);
        if (at < 0) {
            return 0;
        }
        return Math.max(0, at - src.indexOf(head));
    }

    static int lineOf(String code, int pos) {
        int line = 1;
        for (int i = 0; i < pos && i < code.length(); i++) {
            if (code.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }

    Map<String, Object> interrupted() {
        return error("KeyboardInterrupt", "interrupted", List.of("KeyboardInterrupt: the cell was interrupted"));
    }

    Map<String, Object> compileError(Snippet s, String code, int start) {
        List<String> messages = new ArrayList<>();
        List<String> trace = new ArrayList<>();
        for (Diag d : (Iterable<Diag>) jshell.diagnostics(s)::iterator) {
            if (!d.isError() || messages.size() >= 20) {
                continue;
            }
            String msg = d.getMessage(Locale.ROOT).lines()
                .filter(l -> !l.strip().equals("location: class"))
                .collect(Collectors.joining("\n"));
            long pos = d.getStartPosition() >= 0 ? d.getStartPosition() : d.getPosition();
            if (pos < 0) {
                messages.add(msg);
                trace.add(msg);
                continue;
            }
            int at = (int) Math.min(code.length(), start + pos);
            int line = lineOf(code, at);
            int from = code.lastIndexOf('\n', at - 1) + 1;
            int to = code.indexOf('\n', at);
            String text = code.substring(from, to < 0 ? code.length() : to);
            StringBuilder caret = new StringBuilder();
            for (int i = from; i < at; i++) {
                caret.append(code.charAt(i) == '\t' ? '\t' : ' ');
            }
            caret.append('^');
            messages.add("line " + line + ": " + msg);
            trace.add("line " + line + ", column " + (at - from + 1) + ": " + msg);
            trace.add(cut(text, 1000));
            trace.add(cut(caret.toString(), 1001));
        }
        if (messages.isEmpty()) {
            messages.add("the snippet was rejected: " + cut(s.source(), 200));
        }
        String evalue = cut(String.join("\n", messages), TEXT_MAX);
        trace.add(0, "CompilationError: " + messages.get(0));
        return error("CompilationError", evalue, trace);
    }

    String unresolved(Snippet s) {
        String what = describe(s);
        if (!(s instanceof DeclarationSnippet)) {
            return what + " has unresolved references";
        }
        String deps = jshell.unresolvedDependencies((DeclarationSnippet) s).collect(Collectors.joining(", "));
        String verb = s.kind() == Snippet.Kind.METHOD ? "invoked" : "used";
        return what + " cannot be " + verb + " until " + (deps.isEmpty() ? "its references are" : deps + (deps.contains(",") ? " are" : " is")) + " declared";
    }

    static String describe(Snippet s) {
        if (s instanceof MethodSnippet m) {
            return "method " + m.name() + "(" + m.parameterTypes() + ")";
        }
        if (s instanceof DeclarationSnippet d) {
            String kind = s.kind() == Snippet.Kind.VAR ? "variable" : s.kind() == Snippet.Kind.TYPE_DECL ? "type" : "declaration";
            return kind + " " + d.name();
        }
        return "the snippet";
    }

    Map<String, Object> exception(Throwable x) {
        if (x instanceof UnresolvedReferenceException u) {
            String why = unresolved(u.getSnippet());
            return error("UnresolvedReferenceException", why, List.of("UnresolvedReferenceException: " + why));
        }
        String ename = className(x);
        String evalue = x.getMessage() == null ? "" : cut(x.getMessage(), TEXT_MAX);
        List<String> trace = new ArrayList<>();
        Set<Throwable> seen = new LinkedHashSet<>();
        String prefix = "";
        for (Throwable t = x; t != null && seen.add(t) && trace.size() < TRACE_MAX; t = t.getCause()) {
            String msg = t.getMessage();
            trace.add(prefix + className(t) + (msg == null ? "" : ": " + cut(msg, 4096)));
            // Without the kernel's own frames (a display's checks).
            List<StackTraceElement> frames = new ArrayList<>();
            for (StackTraceElement f : t.getStackTrace()) {
                if (!"JShellKernel.java".equals(f.getFileName())) {
                    frames.add(f);
                }
            }
            int shown = 0;
            for (StackTraceElement f : frames) {
                if (trace.size() >= TRACE_MAX) {
                    break;
                }
                trace.add("\tat " + frame(f));
                shown++;
            }
            if (shown < frames.size()) {
                trace.add("\t... " + (frames.size() - shown) + " more");
            }
            prefix = "Caused by: ";
        }
        return error(ename, evalue, trace);
    }

    static String className(Throwable t) {
        return t instanceof EvalException e ? e.getExceptionClassName() : t.getClass().getName();
    }

    // A frame as Java prints it, with a snippet's "#ID:LINE" given as the
    // cell and line it came from.
    String frame(StackTraceElement f) {
        String file = f.getFileName();
        String m = f.getMethodName();
        String where = f.getClassName().isEmpty() ? m : f.getClassName() + "." + m;
        if (file != null && file.startsWith("#")) {
            int[] o = origins.get(file.substring(1));
            String loc = o == null ? "snippet " + file.substring(1) + ", line " + f.getLineNumber()
                : o[0] == 0 ? "glassroom's helper"
                : "cell " + o[0] + ", line " + (o[1] + Math.max(f.getLineNumber(), 1) - 1);
            return where.isEmpty() ? loc : where + " (" + loc + ")";
        }
        return f.toString();
    }

    static Map<String, Object> error(String ename, String evalue, List<String> trace) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("status", "error");
        r.put("ename", ename);
        r.put("evalue", evalue);
        r.put("traceback", trace);
        return r;
    }

    static String cut(String s, int n) {
        return s.length() <= n ? s : s.substring(0, n) + "...";
    }

    // ---- completion

    Map<String, Object> complete(String before) {
        // The snippet the cursor is in: after the complete ones before it.
        SourceCodeAnalysis sca = jshell.sourceCodeAnalysis();
        String rest = before;
        for (int i = 0; i < 10000; i++) {
            SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
            SourceCodeAnalysis.Completeness c = ci.completeness();
            String next = ci.remaining();
            if ((c != SourceCodeAnalysis.Completeness.COMPLETE && c != SourceCodeAnalysis.Completeness.COMPLETE_WITH_SEMI)
                    || next == null || next.isBlank() || next.length() >= rest.length()) {
                break;
            }
            rest = next;
        }
        int offset = before.length() - rest.length();
        int[] anchor = new int[1];
        List<SourceCodeAnalysis.Suggestion> got = sca.completionSuggestions(rest, rest.length(), anchor);
        // Those that fit the expected type first, as jshell lists them.
        Set<String> matches = new LinkedHashSet<>();
        for (SourceCodeAnalysis.Suggestion s : got) {
            if (s.matchesType()) {
                matches.add(s.continuation());
            }
        }
        for (SourceCodeAnalysis.Suggestion s : got) {
            matches.add(s.continuation());
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("matches", matches.stream().limit(COMPLETIONS_MAX).collect(Collectors.toList()));
        r.put("anchor", offset + anchor[0]);
        return r;
    }

    Map<String, Object> isComplete(String code) {
        SourceCodeAnalysis sca = jshell.sourceCodeAnalysis();
        String rest = code;
        String status = "complete";
        while (!rest.isBlank()) {
            SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
            SourceCodeAnalysis.Completeness c = ci.completeness();
            if (c == SourceCodeAnalysis.Completeness.DEFINITELY_INCOMPLETE || c == SourceCodeAnalysis.Completeness.CONSIDERED_INCOMPLETE) {
                status = "incomplete";
                break;
            }
            if (c == SourceCodeAnalysis.Completeness.UNKNOWN) {
                status = "invalid";
                break;
            }
            String next = ci.remaining();
            if (c == SourceCodeAnalysis.Completeness.EMPTY || next == null || next.length() >= rest.length()) {
                break;
            }
            rest = next;
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("status", status);
        return r;
    }

    // ---- display

    // Called by the helper snippets (through Hook), in a cell's thread.
    void display(String mime, Object data) {
        if (mime == null || data == null) {
            throw new NullPointerException("display: the type and the data must not be null");
        }
        boolean text = !(data instanceof byte[]);
        byte[] bytes = text ? data.toString().getBytes(StandardCharsets.UTF_8) : (byte[]) data;
        if (bytes.length > DISPLAY_MAX) {
            throw new IllegalArgumentException("display: the data is over the " + (DISPLAY_MAX >> 20) + " MiB limit (" + bytes.length + " bytes)");
        }
        String answer;
        // One at a time: the kernel shows them in the order they come.
        synchronized (displayLock) {
            flushStreams();
            long id = displayIds.incrementAndGet();
            CompletableFuture<String> done = new CompletableFuture<>();
            displays.put(id, done);
            try {
                Map<String, Object> msg = new LinkedHashMap<>();
                msg.put("type", "display");
                msg.put("id", id);
                msg.put("mime", mime);
                msg.put("data", Base64.getEncoder().encodeToString(bytes));
                msg.put("text", text);
                send(msg);
                answer = done.get(DISPLAY_WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                answer = "display: no answer from the kernel";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                answer = "display: interrupted";
            } catch (java.util.concurrent.ExecutionException e) {
                answer = "display: " + e.getCause();
            } finally {
                displays.remove(id);
            }
        }
        if (!answer.isEmpty()) {
            throw new IllegalArgumentException(answer);
        }
    }

    // The system properties, and the display helpers' way to the kernel.
    static final class Hook extends Properties implements BiConsumer<String, Object>, java.util.function.Supplier<Set<String>> {
        private static final long serialVersionUID = 1L;
        private final transient JShellKernel kernel;

        Hook(JShellKernel kernel) {
            this.kernel = kernel;
        }

        @Override
        public void accept(String mime, Object data) {
            kernel.display(mime, data);
        }

        @Override
        public Set<String> get() {
            return Set.copyOf(kernel.variableNames);
        }

        @Override
        public synchronized boolean equals(Object o) {
            return super.equals(o);
        }

        @Override
        public synchronized int hashCode() {
            return super.hashCode();
        }
    }

    // ---- JSON

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object v) {
        return (Map<String, Object>) v;
    }

    static String str(Object v) {
        return v instanceof String s ? s : "";
    }

    static long num(Object v) {
        return v instanceof Long n ? n : -1;
    }

    // A small JSON reader and writer: objects, arrays, strings, integers
    // (as Long), other numbers (as Double), true, false, null.
    static final class Json {
        private final String s;
        private int i;
        private int depth;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json p = new Json(s);
            p.space();
            Object v = p.value();
            p.space();
            if (p.i != s.length()) {
                throw new IllegalArgumentException("JSON: trailing data at " + p.i);
            }
            return v;
        }

        private Object value() {
            if (i >= s.length()) {
                throw new IllegalArgumentException("JSON: unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    return word("true", Boolean.TRUE);
                case 'f':
                    return word("false", Boolean.FALSE);
                case 'n':
                    return word("null", null);
                default:
                    return number();
            }
        }

        private Object word(String w, Object v) {
            if (!s.startsWith(w, i)) {
                throw new IllegalArgumentException("JSON: bad literal at " + i);
            }
            i += w.length();
            return v;
        }

        private Map<String, Object> object() {
            if (++depth > 64) {
                throw new IllegalArgumentException("JSON: too deep");
            }
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            space();
            if (peek() == '}') {
                i++;
                depth--;
                return m;
            }
            for (;;) {
                space();
                if (peek() != '"') {
                    throw new IllegalArgumentException("JSON: a key expected at " + i);
                }
                String k = string();
                space();
                expect(':');
                space();
                m.put(k, value());
                space();
                char c = next();
                if (c == '}') {
                    depth--;
                    return m;
                }
                if (c != ',') {
                    throw new IllegalArgumentException("JSON: ',' or '}' expected at " + i);
                }
            }
        }

        private List<Object> array() {
            if (++depth > 64) {
                throw new IllegalArgumentException("JSON: too deep");
            }
            List<Object> l = new ArrayList<>();
            i++;
            space();
            if (peek() == ']') {
                i++;
                depth--;
                return l;
            }
            for (;;) {
                space();
                l.add(value());
                space();
                char c = next();
                if (c == ']') {
                    depth--;
                    return l;
                }
                if (c != ',') {
                    throw new IllegalArgumentException("JSON: ',' or ']' expected at " + i);
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            for (;;) {
                char c = next();
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = next();
                switch (e) {
                    case '"': case '\\': case '/':
                        b.append(e);
                        break;
                    case 'b':
                        b.append('\b');
                        break;
                    case 'f':
                        b.append('\f');
                        break;
                    case 'n':
                        b.append('\n');
                        break;
                    case 'r':
                        b.append('\r');
                        break;
                    case 't':
                        b.append('\t');
                        break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw new IllegalArgumentException("JSON: bad escape at " + i);
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw new IllegalArgumentException("JSON: bad escape at " + i);
                        }
                        i += 4;
                        break;
                    default:
                        throw new IllegalArgumentException("JSON: bad escape at " + i);
                }
            }
        }

        private Object number() {
            int from = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String n = s.substring(from, i);
            try {
                if (n.matches("-?[0-9]{1,18}")) {
                    return Long.parseLong(n);
                }
                return Double.parseDouble(n);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("JSON: bad number at " + from);
            }
        }

        private void space() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        private char peek() {
            return i < s.length() ? s.charAt(i) : '\0';
        }

        private char next() {
            if (i >= s.length()) {
                throw new IllegalArgumentException("JSON: unexpected end");
            }
            return s.charAt(i++);
        }

        private void expect(char c) {
            if (next() != c) {
                throw new IllegalArgumentException("JSON: '" + c + "' expected at " + (i - 1));
            }
        }

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        private static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof Boolean || v instanceof Long || v instanceof Integer) {
                b.append(v);
            } else if (v instanceof Map<?, ?> m) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof List<?> l) {
                b.append('[');
                for (int k = 0; k < l.size(); k++) {
                    if (k > 0) {
                        b.append(',');
                    }
                    write(b, l.get(k));
                }
                b.append(']');
            } else {
                quote(b, v.toString());
            }
        }

        private static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                    case '"':
                        b.append("\\\"");
                        break;
                    case '\\':
                        b.append("\\\\");
                        break;
                    case '\n':
                        b.append("\\n");
                        break;
                    case '\r':
                        b.append("\\r");
                        break;
                    case '\t':
                        b.append("\\t");
                        break;
                    default:
                        if (c < 0x20 || Character.isSurrogate(c)) {
                            // Surrogates as escapes: a lone one stays valid JSON.
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            b.append('"');
        }
    }
}
