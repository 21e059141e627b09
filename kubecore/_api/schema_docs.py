"""What the generated OpenAPI schemas say beyond the model's docstrings: the descriptions of the
fields people look up most (``FIELD_DOCS``, keyed ``Class.jsonField``), of the fields every
top-level kind has (``TOP_FIELDS``), and the metadata an API server sets (``META_FIELDS``, with
the schemas they refer to: ``API_SERVER_SCHEMAS``), which the node keeps but a manifest does not
give."""

from __future__ import annotations

from typing import Any

_META = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1."
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"

TOP_FIELDS: dict[str, str] = {
    "apiVersion": f"The versioned schema of this object: v1. More info: {_CONVENTIONS}#resources",
    "kind": "The kind of object this is, in CamelCase (Pod, ConfigMap, Secret). More info: "
    f"{_CONVENTIONS}#types-kinds",
    "metadata": f"The object's name, namespace, labels and annotations. More info: "
    f"{_CONVENTIONS}#metadata",
    "spec": "What the pod should run: its containers, volumes and policies. More info: "
    f"{_CONVENTIONS}#spec-and-status",
    "status": "What the node last observed of the pod; written by the node, read-only. More "
    f"info: {_CONVENTIONS}#spec-and-status",
}

CLASS_DOCS: dict[str, str] = {
    "Pod": "A pod: one or more containers the node runs together, sharing a network and "
    "volumes; its metadata, its spec and the status the node reports.",
    "ResourceRequirements": "Compute resources (cpu, memory, ...) a container requests and "
    "the limits it may not exceed, as quantities (250m, 128Mi).",
    "Capabilities": "Linux capabilities added to or dropped from a container's default set "
    "(NET_ADMIN or CAP_NET_ADMIN; ALL).",
    "Secret": "Sensitive data (passwords, tokens, keys) by key, that pods read as environment "
    "variables or files.",
    "ContainerState": "The state of a container: exactly one of waiting, running and "
    "terminated is set (none when the state is unknown).",
    "PodAffinity": "Rules on the pods a pod's node must (or should) be near, or away from "
    "(podAffinity and podAntiAffinity have this shape).",
}
"""Descriptions of schemas whose model docstring speaks of the Python side."""

FIELD_DOCS: dict[str, str] = {
    # ObjectMeta
    "ObjectMeta.name": "The object's name, unique in its namespace for its kind.",
    "ObjectMeta.namespace": "The namespace the object lives in (default: default).",
    "ObjectMeta.uid": "The unique id the API gives the object when it is created; read-only.",
    "ObjectMeta.labels": "Key/value pairs that label selectors match (kubectl get -l).",
    "ObjectMeta.annotations": "Key/value pairs that tools keep on the object; not selectable.",
    "ObjectMeta.generateName": "A prefix from which the API server makes a unique name when "
    "name is empty.",
    "ObjectMeta.creationTimestamp": "When the object was created; read-only.",
    # PodSpec
    "PodSpec.containers": "The pod's containers; at least one. Cannot be added or removed "
    "once the pod runs.",
    "PodSpec.initContainers": "Containers run to completion, one after the other, before the "
    "app containers start (or, with restartPolicy Always, kept running beside them).",
    "PodSpec.volumes": "Volumes the pod's containers may mount.",
    "PodSpec.restartPolicy": "Always, OnFailure or Never: whether the node restarts containers "
    "that exit (default: Always).",
    "PodSpec.terminationGracePeriodSeconds": "Seconds a container has to stop after TERM before "
    "it is killed (default: 30).",
    "PodSpec.nodeName": "The node the pod is bound to.",
    "PodSpec.hostNetwork": "The pod uses the node's network namespace.",
    "PodSpec.nodeSelector": "Labels the node must have for the pod to be admitted.",
    "PodSpec.imagePullSecrets": "Secrets of the pod's namespace holding registry credentials "
    "for pulling its images.",
    # Container
    "Container.name": "The container's name, unique in the pod (a DNS label).",
    "Container.image": "The image reference (registry/name:tag or @digest).",
    "Container.command": "The entrypoint, run without a shell; the image's ENTRYPOINT when "
    "empty. $(VAR) refers to an environment variable.",
    "Container.args": "Arguments to the entrypoint; the image's CMD when empty.",
    "Container.workingDir": "The working directory; the image's when empty.",
    "Container.env": "Environment variables set in the container.",
    "Container.envFrom": "ConfigMaps and Secrets whose every key becomes an environment variable.",
    "Container.ports": "Ports the container listens on (informational, unless hostPort is set).",
    "Container.volumeMounts": "The pod's volumes mounted into the container's filesystem.",
    "Container.resources": "CPU and memory the container requests and may not exceed.",
    "Container.livenessProbe": "A periodic check; the container is restarted when it fails.",
    "Container.readinessProbe": "A periodic check; the pod is not Ready while it fails.",
    "Container.startupProbe": "A check that must succeed once before the other probes start.",
    "Container.lifecycle": "Hooks run after the container starts and before it stops.",
    "Container.imagePullPolicy": "Always, IfNotPresent or Never (default: Always for :latest "
    "or no tag, else IfNotPresent).",
    "Container.securityContext": "Security options of the container, over the pod's.",
    "ResourceRequirements.requests": "The least of each resource the container needs; "
    "admission and QoS count these.",
    "ResourceRequirements.limits": "The most of each resource the container may use.",
    "EnvVar.name": "The variable's name.",
    "EnvVar.value": "The variable's value; $(VAR) refers to another variable.",
    "EnvVar.valueFrom": "Where the value comes from, when not given as value.",
    "ContainerPort.containerPort": "The port number the container listens on.",
    "ContainerPort.protocol": "TCP, UDP or SCTP (default: TCP).",
    "ContainerPort.hostPort": "The node's port published to this container port.",
    "ContainerPort.name": "A name for the port, that probes and services can refer to.",
    "VolumeMount.name": "The name of the pod's volume to mount.",
    "VolumeMount.mountPath": "Where in the container the volume appears.",
    "VolumeMount.readOnly": "Mount the volume read-only.",
    "VolumeMount.subPath": "The path inside the volume to mount instead of its root.",
    "Volume.name": "The volume's name, which volume mounts refer to.",
    "Volume.emptyDir": "A directory that lives as long as the pod.",
    "Volume.hostPath": "A file or directory of the node.",
    "Volume.configMap": "A ConfigMap's keys as files.",
    "Volume.secret": "A Secret's keys as files.",
    "Volume.projected": "Several sources (ConfigMaps, Secrets, downward API) in one directory.",
    "Volume.downwardAPI": "Fields of the pod and resources of its containers as files.",
    "Volume.persistentVolumeClaim": "A persistent volume claimed by name.",
    "Lifecycle.postStart": "Run right after the container starts; it is killed if this fails.",
    "Lifecycle.preStop": "Run before the container is stopped.",
    "ContainerStatus.name": "The container's name, as in the spec.",
    "ContainerStatus.image": "The image the container runs.",
    "ContainerStatus.imageID": "The id of the image the container runs.",
    "ContainerStatus.started": "Whether the container passed its startup probe (or has none "
    "and is running).",
    "ContainerStateTerminated.exitCode": "The container's exit code.",
    "ContainerStateTerminated.reason": "Why the container exited (Completed, Error, "
    "OOMKilled, ...).",
    "ContainerStateWaiting.reason": "Why the container is not running yet "
    "(ContainerCreating, CrashLoopBackOff, ImagePullBackOff, ...).",
    "PodCondition.type": "The condition: PodScheduled, Initialized, ContainersReady, Ready, "
    "or a readiness gate's.",
    "PodCondition.status": "True, False or Unknown.",
    "PodSecurityContext.runAsUser": "The user id the containers run as (over the image's).",
    "PodSecurityContext.fsGroup": "A group that owns the pod's volumes and that every "
    "container runs with.",
    "SecurityContext.privileged": "Run the container with every capability and the node's devices.",
    "SecurityContext.runAsUser": "The user id the container runs as (over the pod's and the "
    "image's).",
    "SecurityContext.readOnlyRootFilesystem": "Mount the container's root filesystem read-only.",
    # Probe and actions
    "Probe.exec": "Run a command in the container; exit code 0 is success.",
    "Probe.httpGet": "An HTTP GET to the container; a status from 200 to 399 is success.",
    "Probe.tcpSocket": "A TCP connection to the container's port; connecting is success.",
    "Probe.grpc": "A gRPC health check of the container's port.",
    "Probe.initialDelaySeconds": "Seconds after the container starts before the first check.",
    "Probe.periodSeconds": "Seconds between checks (default: 10).",
    "Probe.timeoutSeconds": "Seconds a check may take (default: 1).",
    "Probe.failureThreshold": "Failures in a row that make the probe fail (default: 3).",
    "Probe.successThreshold": "Successes in a row that make the probe pass again (default: 1).",
    "HTTPGetAction.port": "The port to connect to: a number, or the name of a container port.",
    "HTTPGetAction.path": "The path of the request (default: /).",
    "HTTPGetAction.host": "The host to connect to (default: the pod's IP).",
    "HTTPGetAction.scheme": "HTTP or HTTPS (default: HTTP).",
    "HTTPGetAction.httpHeaders": "Headers the request carries.",
    # status
    "PodStatus.phase": "Pending, Running, Succeeded, Failed or Unknown: where the pod is in "
    "its lifecycle.",
    "PodStatus.conditions": "The pod's conditions (PodScheduled, Initialized, ContainersReady, "
    "Ready).",
    "PodStatus.containerStatuses": "The state of each app container.",
    "PodStatus.initContainerStatuses": "The state of each init container.",
    "PodStatus.podIP": "The pod's IP address (its first).",
    "PodStatus.hostIP": "The IP address of the node the pod runs on.",
    "PodStatus.startTime": "When the node accepted the pod.",
    "PodStatus.qosClass": "Guaranteed, Burstable or BestEffort, from the containers' resources.",
    "ContainerStatus.state": "The container's current state.",
    "ContainerStatus.lastState": "The state the container was in before its last restart.",
    "ContainerStatus.ready": "Whether the container passes its readiness probe.",
    "ContainerStatus.restartCount": "How many times the container was restarted.",
    "ContainerStatus.containerID": "The runtime's id of the container (runtime://id).",
    "ContainerState.waiting": "The container is not running yet.",
    "ContainerState.running": "The container is running.",
    "ContainerState.terminated": "The container ran and exited.",
    # ConfigMap and Secret
    "ConfigMap.data": "UTF-8 values by key.",
    "ConfigMap.binaryData": "Binary values by key, base64 in JSON.",
    "ConfigMap.immutable": "When true, data cannot change (the object can only be deleted).",
    "Secret.data": "Secret values by key, base64 in JSON.",
    "Secret.stringData": "Values given as text, merged into data when written; never read back.",
    "Secret.type": "What the secret holds (Opaque, kubernetes.io/dockerconfigjson, ...).",
    "Secret.immutable": "When true, data cannot change (the object can only be deleted).",
}

META_FIELDS: dict[str, dict[str, Any]] = {
    "resourceVersion": {
        "type": "string",
        "description": "The version of the object the API last wrote; changes on every write "
        "(opaque: compare for equality only).",
    },
    "generation": {
        "type": "integer",
        "format": "int64",
        "description": "A sequence number of changes to the desired state; read-only.",
    },
    "deletionTimestamp": {
        "allOf": [{"$ref": _META + "Time"}],
        "description": "When the object is to be gone; set by the API server when it is "
        "deleted gracefully, read-only.",
    },
    "deletionGracePeriodSeconds": {
        "type": "integer",
        "format": "int64",
        "description": "Seconds allowed for a graceful deletion; read-only.",
    },
    "finalizers": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Names that must be removed before a deleted object is gone.",
    },
    "ownerReferences": {
        "type": "array",
        "items": {"allOf": [{"$ref": _META + "OwnerReference"}]},
        "description": "The objects this one depends on.",
    },
    "managedFields": {
        "type": "array",
        "items": {"allOf": [{"$ref": _META + "ManagedFieldsEntry"}]},
        "description": "Which manager set which fields, for server-side apply.",
    },
}

_STRING: dict[str, Any] = {"type": "string"}
API_SERVER_SCHEMAS: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {
        "description": "An object that owns this one.",
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": {**_STRING, "description": "The owner's API version."},
            "kind": {**_STRING, "description": "The owner's kind."},
            "name": {**_STRING, "description": "The owner's name."},
            "uid": {**_STRING, "description": "The owner's uid."},
            "controller": {"type": "boolean", "description": "The owner is the controller."},
            "blockOwnerDeletion": {
                "type": "boolean",
                "description": "The owner cannot be deleted before this object.",
            },
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
        "description": "The fields one manager set, and how.",
        "type": "object",
        "properties": {
            "manager": {**_STRING, "description": "Who set the fields."},
            "operation": {**_STRING, "description": "Apply or Update."},
            "apiVersion": {**_STRING, "description": "The version the fields are given in."},
            "time": {
                "allOf": [{"$ref": _META + "Time"}],
                "description": "When the manager last changed them.",
            },
            "fieldsType": {**_STRING, "description": "The form of fieldsV1: FieldsV1."},
            "fieldsV1": {
                "allOf": [{"$ref": _META + "FieldsV1"}],
                "description": "The set of fields, as a tree.",
            },
            "subresource": {**_STRING, "description": "The subresource written, if any."},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {
        "description": "A set of fields, as a JSON tree of f:name, k:{key} and v:value entries.",
        "type": "object",
    },
}
