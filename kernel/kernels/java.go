package kernels

import (
	_ "embed"
	"fmt"
	"strings"
)

// javaKernel is the Java kernel's Python side (on ipykernel's Kernel
// base), which drives one JVM running jshellKernel.
//
//go:embed javakernel.py
var javaKernel string

// jshellKernel is the JVM's side: a Java program on the JShell API whose
// snippets run in its own JVM, compiled at each start from this source
// (Java's source-file mode), so no build step and no file outside the
// gateway can change it.
//
//go:embed JShellKernel.java
var jshellKernel string

// javaBinary is where Debian's openjdk-17-jdk-headless puts java (one
// directory per architecture).
const javaBinary = "/usr/lib/jvm/java-17-openjdk-*/bin/java"

// java is a Java kernel on JShell (javakernel.py and JShellKernel.java),
// from Debian's openjdk-17-jdk-headless. The session's environment is
// also the JVM's system properties (E2B passes envs to Java so), and its
// working directory is user.dir.
func java() Kernel {
	return Kernel{
		Name:        "java",
		Aliases:     []string{"java", "jshell"},
		DisplayName: "Java",
		Label:       "Java",
		Language:    LanguageInfo{Name: "java", Mimetype: "text/x-java", FileExtension: ".java", CodeMirrorMode: "text/x-java", PygmentsLexer: "java"},
		// The notebook's editor has no Java mode yet (plain text).
		EditorMode:  "",
		SDKLanguage: "java",
		Launch:      Launch{Kind: Program, Program: "JSHELL_SOURCE = " + jsonLit(jshellKernel) + "\n" + programKernel + "\n" + javaKernel},
		// jshell is in the JDK only (the JRE has no compiler).
		Probe: Probe{
			Executables: []string{javaBinary, "/usr/lib/jvm/java-17-openjdk-*/bin/jshell"},
			Files:       []string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/ipykernel/__init__.py"},
		},
		// The JDK's conf/ and lib/ link to Debian's configuration
		// (java.security, jvm.cfg).
		HostConfig: []string{"/etc/java-17-openjdk"},
		ReservedEnv: []ReservedEnv{
			{"JAVA_TOOL_OPTIONS", "it steers the JVM at kernel start"},
			{"_JAVA_OPTIONS", "it steers the JVM at kernel start"},
			{"JDK_JAVA_OPTIONS", "it steers the JVM at kernel start"},
			{"JAVA_HOME", "it steers the JVM at kernel start"},
			{"CLASSPATH", "it steers the JVM at kernel start"},
		},
		Settings:    &Settings{Apply: javaApply, Restore: javaRestore, PropertiesOnly: true, FixedCwd: true},
		JupyterArgv: []string{"python3", "-I", "javakernel.py", "-f", "{connection_file}"},
		Smoke:       []string{"sh", "-c", "exec /usr/lib/jvm/java-17-openjdk-*/bin/jshell --version"},
		Hello:       "System.out.println(6 * 7);",
	}
}

// Java: an execution's envs are system properties (E2B's convention; a
// JVM's environment cannot change). What they replace is saved as one
// string property of the kernel's own (names, and values in base64: the
// properties hold strings only, so Properties.list and store keep
// working). A JVM's working directory cannot change either: sessions
// refuse an execution's cwd (FixedCwd), and the apply checks it again.
const javaApplyCode = `{
  String[][] glassroomPairs = new String[][] {%s};
  String glassroomCwd = %s;
  if (glassroomCwd != null && !java.nio.file.Paths.get(System.getProperty("user.dir")).equals(java.nio.file.Paths.get(glassroomCwd)))
    throw new IllegalArgumentException("cwd " + glassroomCwd + ": the Java kernel keeps the working directory it started in (" + System.getProperty("user.dir") + ")");
  StringBuilder glassroomSaved = new StringBuilder();
  for (String[] p : glassroomPairs) {
    String old = System.getProperty(p[0]);
    glassroomSaved.append(p[0]).append(old == null ? "=-," : "=+" + java.util.Base64.getEncoder().encodeToString(old.getBytes(java.nio.charset.StandardCharsets.UTF_8)) + ",");
  }
  System.setProperty("glassroom.exec.settings", glassroomSaved.toString());
  for (String[] p : glassroomPairs) System.setProperty(p[0], p[1]);
}`

const javaRestore = `{
  String glassroomSaved = System.getProperty("glassroom.exec.settings");
  if (glassroomSaved != null) {
    for (String e : glassroomSaved.split(",")) {
      int i = e.indexOf('=');
      if (i <= 0) continue;
      String k = e.substring(0, i), v = e.substring(i + 1);
      if (v.startsWith("+")) System.setProperty(k, new String(java.util.Base64.getDecoder().decode(v.substring(1)), java.nio.charset.StandardCharsets.UTF_8));
      else System.clearProperty(k);
    }
    System.clearProperty("glassroom.exec.settings");
  }
}`

func javaApply(envs [][2]string, cwd string) string {
	c := "null"
	if cwd != "" {
		c = jsonLit(cwd)
	}
	var b strings.Builder
	for i, kv := range envs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{" + jsonLit(kv[0]) + ", " + jsonLit(kv[1]) + "}")
	}
	return fmt.Sprintf(javaApplyCode, b.String(), c)
}
