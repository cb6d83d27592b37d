#!/usr/bin/python3
"""Drives a command through a real terminal, as a user at a keyboard would:
pty_session.py ROWS COLS -- COMMAND... runs COMMAND on a new pty of that size
(its controlling terminal), then sends the lines of stdin one by one, each after
the output so far has settled. A line "@resize R C" resizes the terminal (the
kernel sends SIGWINCH, as a terminal emulator's resize does); "@ctrl-c" types
Ctrl-C. Prints everything the terminal showed."""
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_for(master, seconds, out):
    """Reads until the terminal has been quiet for `seconds`."""
    while True:
        ready, _, _ = select.select([master], [], [], seconds)
        if not ready:
            return
        try:
            data = os.read(master, 4096)
        except OSError:
            return
        if not data:
            return
        out.append(data)


def main():
    rows, cols, sep, *command = sys.argv[1:]
    assert sep == "--"
    master, slave = os.openpty()
    set_size(slave, int(rows), int(cols))

    def own_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, preexec_fn=own_terminal)
    os.close(slave)
    out = []
    read_for(master, 3.0, out)  # the container starts, the shell prompts
    for line in sys.stdin.read().splitlines():
        if line.startswith("@resize "):
            _, r, c = line.split()
            set_size(master, int(r), int(c))
            time.sleep(1.0)  # srun forwards the new size to the step's pty
        elif line == "@ctrl-c":
            os.write(master, b"\x03")
        else:
            os.write(master, line.encode() + b"\r")
        read_for(master, 1.5, out)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    read_for(master, 0.5, out)
    sys.stdout.write(b"".join(out).decode(errors="replace").replace("\r", ""))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
