"""The prober: liveness, readiness and startup probes of running containers. ``manager`` keeps
each container's probe schedule and results (read by the planner as ``ProbeState`` values),
``runner`` runs the probes that are due (inline in virtual time, or on its own threads off the
sync path), and ``health`` is the default ``HealthChecker`` (exec, HTTP GET, TCP, gRPC)."""
