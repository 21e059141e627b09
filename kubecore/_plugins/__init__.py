"""Runtime plugins: ``registry`` finds them through pluggy entry points (group ``kubecore``),
loads one only when asked, and checks what it returns against the runtime contract."""
