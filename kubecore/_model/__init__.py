"""The values kubecore reasons about: ``v1`` (the Kubernetes ``v1`` Pod, ConfigMap and Secret as
frozen attrs classes, published as ``kubecore.v1``), ``quantity`` (resource quantities read
exactly as Kubernetes does), ``qos`` (the pod's QoS class) and ``imageref`` (image references as
Docker reads them)."""
