"""How kubecore writes durations: one formatter for every table (kubectl's ``AGE`` column, the
CLI's own table, ``kubecore etcd get``), so the same age reads the same everywhere."""

from __future__ import annotations


def human_duration(seconds: float) -> str:
    """An age as kubectl prints it (apimachinery's ``HumanDuration``): ``45s``, ``3m20s``,
    ``12m``, ``5h10m``, ``20h``, ``3d4h``, ``12d``, ``2y70d``, ``9y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    s = max(0, s)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"
