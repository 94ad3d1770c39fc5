"""What every command runs with: clocks, logs, progress, paths, permissions, process groups, exit codes."""
