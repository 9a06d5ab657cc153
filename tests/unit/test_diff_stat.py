"""`/diff`'s stat: lines added and removed per file, read from the diff git writes."""

import subprocess

from clover_code.ui.tui.diff_stat import FileStat, diff_stat

DIFF = """\
diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
 def add(a, b):
--- a comment line that starts like a header
+++ a line that starts like a header
-    return a - b
+    return a + b
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-one
-two
diff --git a/logo.png b/logo.png
new file mode 100644
Binary files /dev/null and b/logo.png differ
diff --git a/dir with space/b/x.py b/dir with space/b/x.py
new file mode 100644
--- /dev/null
+++ b/dir with space/b/x.py
@@ -0,0 +1 @@
+x = 1
\\ No newline at end of file
"""


def test_each_file_counts_its_hunk_lines_not_its_headers():
    assert diff_stat(DIFF) == [
        FileStat("app.py", added=2, removed=2),
        FileStat("gone.txt", added=0, removed=2),
        FileStat("logo.png", binary=True),
        FileStat("dir with space/b/x.py", added=1, removed=0),
    ]


def test_no_diff_no_files():
    assert diff_stat("") == []


def test_it_agrees_with_gits_numstat(git_repo):
    (git_repo / "README.md").write_text("hello\nworld\n--- not a header\n")
    (git_repo / "new.py").write_text("a = 1\nb = 2\n")
    subprocess.run(["git", "add", "-A"], cwd=git_repo, check=True)
    diff = subprocess.run(["git", "diff", "--cached", "--no-color"], cwd=git_repo, capture_output=True,
                          text=True, check=True).stdout
    numstat = subprocess.run(["git", "diff", "--cached", "--numstat"], cwd=git_repo, capture_output=True,
                             text=True, check=True).stdout
    expected = [FileStat(path, int(added), int(removed))
                for added, removed, path in (line.split("\t") for line in numstat.splitlines())]
    assert diff_stat(diff) == expected
