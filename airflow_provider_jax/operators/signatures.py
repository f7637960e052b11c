"""The JAX operators' signatures, written by ``make docs`` (``argument_signature.py``)
from the declaration (``JobArguments``); do not edit. Each operator's ``__init__``
takes its own arguments by name, type and default, and Airflow's as typed ``**kwargs``;
each templated argument is a property Airflow renders."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from airflow_provider_jax.operators.job_arguments import JobArguments
from airflow_provider_jax.operators.job_operator import JaxJobOperator

if TYPE_CHECKING:
    import datetime
    from collections.abc import Mapping, Sequence
    from typing import Any, Unpack

    from airflow.providers.cncf.kubernetes.secret import Secret
    from airflow.sdk import Asset
    from airflow.sdk.definitions.deadline import DeadlineAlert

    from airflow_provider_jax.contract.backend import BackendName, OnFinishAction
    from airflow_provider_jax.manifest.capacity import QueueUntil
    from airflow_provider_jax.manifest.gpu_direct import GpuNetworking
    from airflow_provider_jax.manifest.in_place_restart import RestartStrategy
    from airflow_provider_jax.manifest.kubernetes_syntax import PullPolicy
    from airflow_provider_jax.manifest.named_storage import Storage
    from airflow_provider_jax.manifest.pathways import Pathways
    from airflow_provider_jax.manifest.secret_refs import SecretRef
    from airflow_provider_jax.operators.base_arguments import AirflowArguments
    from airflow_provider_jax.reporting.host_logs import StreamLogs


class TemplatedArguments(JaxJobOperator):
    """The templated arguments, as the attributes Airflow renders: each reads and
    writes the operator's arguments."""

    @property
    def image(self) -> str | None:
        return self.arguments.image

    @image.setter
    def image(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, image=value)

    @property
    def command(self) -> list[str] | tuple[str, ...] | None:
        return self.arguments.command

    @command.setter
    def command(self, value: list[str] | tuple[str, ...] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, command=value)

    @property
    def entrypoint(self) -> str | None:
        return self.arguments.entrypoint

    @entrypoint.setter
    def entrypoint(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, entrypoint=value)

    @property
    def entrypoint_kwargs(self) -> Mapping[str, Any] | None:
        return self.arguments.entrypoint_kwargs

    @entrypoint_kwargs.setter
    def entrypoint_kwargs(self, value: Mapping[str, Any] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, entrypoint_kwargs=value)

    @property
    def argv(self) -> list[str] | tuple[str, ...] | None:
        return self.arguments.argv

    @argv.setter
    def argv(self, value: list[str] | tuple[str, ...] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, argv=value)

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.arguments.env

    @env.setter
    def env(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, env=value)

    @property
    def output_dir(self) -> str | None:
        return self.arguments.output_dir

    @output_dir.setter
    def output_dir(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, output_dir=value)

    @property
    def name(self) -> str | None:
        return self.arguments.name

    @name.setter
    def name(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, name=value)

    @property
    def namespace(self) -> str:
        return self.arguments.namespace

    @namespace.setter
    def namespace(self, value: str) -> None:
        self.arguments = dataclasses.replace(self.arguments, namespace=value)

    @property
    def labels(self) -> Mapping[str, str] | None:
        return self.arguments.labels

    @labels.setter
    def labels(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, labels=value)

    @property
    def annotations(self) -> Mapping[str, str] | None:
        return self.arguments.annotations

    @annotations.setter
    def annotations(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, annotations=value)

    @property
    def total_steps(self) -> int | str | None:
        return self.arguments.total_steps

    @total_steps.setter
    def total_steps(self, value: int | str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, total_steps=value)


class TpuSliceSignature(TemplatedArguments):
    """The arguments of the TPU operator: the shared ones and its own."""

    def __init__(
        self,
        *,
        accelerator: str,
        num_slices: int = 1,
        chips_per_host: int | None = None,
        dynamic_slicing: bool = False,
        image: str | None = None,
        command: list[str] | tuple[str, ...] | None = None,
        entrypoint: str | None = None,
        entrypoint_kwargs: Mapping[str, Any] | None = None,
        argv: list[str] | tuple[str, ...] | None = None,
        min_slices: int | None = None,
        shrink_after: datetime.timedelta | float | None = None,
        env: Mapping[str, str] | None = None,
        output_dir: str | None = None,
        checkpoint_asset: Asset | None = None,
        initialize_distributed: bool | None = None,
        require_distributed: bool = False,
        pathways: bool | Pathways = False,
        pip_packages: list[str] | tuple[str, ...] = (),
        python: str = "python3",
        name: str | None = None,
        namespace: str = "default",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        container_resources: Mapping[str, Mapping[str, str | int | float]] | None = None,
        service_account_name: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        volumes: Sequence[Mapping[str, Any]] = (),
        volume_mounts: Sequence[Mapping[str, Any]] = (),
        storage: Sequence[Storage] = (),
        max_restarts: int = 3,
        restart_on_exit_codes: Sequence[int] = (),
        restart_strategy: RestartStrategy = "recreate",
        local_checkpoint_size: str | None = None,
        termination_grace_period: int | None = None,
        retry_on_code_error: bool | None = None,
        progress_timeout: float | None = None,
        total_steps: int | str | None = None,
        deadline: DeadlineAlert | Sequence[DeadlineAlert] | None = None,
        profile_steps: tuple[int, int] | list[int] | None = None,
        debug_dump: bool = False,
        jax_config: Mapping[str, Any] | None = None,
        checkpoint_warn_after: datetime.timedelta | float | None = 600.0,
        ttl_seconds_after_finished: int | None = None,
        priority_class_name: str | None = None,
        queue_name: str | None = None,
        queue_timeout: datetime.timedelta | float | None = None,
        queue_timeout_until: QueueUntil = "running",
        capacity: str | list[str] | tuple[str, ...] = "on-demand",
        capacity_wait: datetime.timedelta | float | None = None,
        compute_class: str | None = None,
        reservation_project: str | None = None,
        placement: str | None = None,
        pod_template_override: Mapping[str, Any] | None = None,
        image_pull_policy: PullPolicy | None = None,
        coordinator_port: int | None = None,
        host_network: bool | None = None,
        secrets: Sequence[SecretRef | Secret] = (),
        security_context: Mapping[str, Any] | None = None,
        backend: BackendName | None = None,
        kubernetes_conn_id: str | None = "kubernetes_default",
        deferrable: bool | None = None,
        on_finish_action: OnFinishAction = "delete_jobset",
        poll_interval: float = 10.0,
        stream_logs: StreamLogs = "leader",
        project_id: str | None = None,
        location: str | None = None,
        cluster_name: str | None = None,
        gcp_conn_id: str = "google_cloud_default",
        impersonation_chain: str | list[str] | tuple[str, ...] | None = None,
        **kwargs: Unpack[AirflowArguments],
    ) -> None:
        self._start(
            JobArguments(
                accelerator=accelerator,
                num_slices=num_slices,
                chips_per_host=chips_per_host,
                dynamic_slicing=dynamic_slicing,
                image=image,
                command=command,
                entrypoint=entrypoint,
                entrypoint_kwargs=entrypoint_kwargs,
                argv=argv,
                min_slices=min_slices,
                shrink_after=shrink_after,
                env=env,
                output_dir=output_dir,
                checkpoint_asset=checkpoint_asset,
                initialize_distributed=initialize_distributed,
                require_distributed=require_distributed,
                pathways=pathways,
                pip_packages=pip_packages,
                python=python,
                name=name,
                namespace=namespace,
                labels=labels,
                annotations=annotations,
                container_resources=container_resources,
                service_account_name=service_account_name,
                node_selector=node_selector,
                tolerations=tolerations,
                volumes=volumes,
                volume_mounts=volume_mounts,
                storage=storage,
                max_restarts=max_restarts,
                restart_on_exit_codes=restart_on_exit_codes,
                restart_strategy=restart_strategy,
                local_checkpoint_size=local_checkpoint_size,
                termination_grace_period=termination_grace_period,
                retry_on_code_error=retry_on_code_error,
                progress_timeout=progress_timeout,
                total_steps=total_steps,
                deadline=deadline,
                profile_steps=profile_steps,
                debug_dump=debug_dump,
                jax_config=jax_config,
                checkpoint_warn_after=checkpoint_warn_after,
                ttl_seconds_after_finished=ttl_seconds_after_finished,
                priority_class_name=priority_class_name,
                queue_name=queue_name,
                queue_timeout=queue_timeout,
                queue_timeout_until=queue_timeout_until,
                capacity=capacity,
                capacity_wait=capacity_wait,
                compute_class=compute_class,
                reservation_project=reservation_project,
                placement=placement,
                pod_template_override=pod_template_override,
                image_pull_policy=image_pull_policy,
                coordinator_port=coordinator_port,
                host_network=host_network,
                secrets=secrets,
                security_context=security_context,
                backend=backend,
                kubernetes_conn_id=kubernetes_conn_id,
                deferrable=deferrable,
                on_finish_action=on_finish_action,
                poll_interval=poll_interval,
                stream_logs=stream_logs,
                project_id=project_id,
                location=location,
                cluster_name=cluster_name,
                gcp_conn_id=gcp_conn_id,
                impersonation_chain=impersonation_chain,
            ),
            kwargs,
        )


class GpuJobSignature(TemplatedArguments):
    """The arguments of the GPU operator: the shared ones and its own."""

    def __init__(
        self,
        *,
        accelerator: str,
        gpus_per_node: int | None = None,
        num_nodes: int | None = None,
        image: str | None = None,
        command: list[str] | tuple[str, ...] | None = None,
        entrypoint: str | None = None,
        entrypoint_kwargs: Mapping[str, Any] | None = None,
        argv: list[str] | tuple[str, ...] | None = None,
        env: Mapping[str, str] | None = None,
        output_dir: str | None = None,
        checkpoint_asset: Asset | None = None,
        initialize_distributed: bool | None = None,
        require_distributed: bool = False,
        pip_packages: list[str] | tuple[str, ...] = (),
        python: str = "python3",
        name: str | None = None,
        namespace: str = "default",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        container_resources: Mapping[str, Mapping[str, str | int | float]] | None = None,
        service_account_name: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        volumes: Sequence[Mapping[str, Any]] = (),
        volume_mounts: Sequence[Mapping[str, Any]] = (),
        storage: Sequence[Storage] = (),
        max_restarts: int = 3,
        restart_on_exit_codes: Sequence[int] = (),
        restart_strategy: RestartStrategy = "recreate",
        local_checkpoint_size: str | None = None,
        termination_grace_period: int | None = None,
        retry_on_code_error: bool | None = None,
        progress_timeout: float | None = None,
        total_steps: int | str | None = None,
        deadline: DeadlineAlert | Sequence[DeadlineAlert] | None = None,
        profile_steps: tuple[int, int] | list[int] | None = None,
        debug_dump: bool = False,
        jax_config: Mapping[str, Any] | None = None,
        checkpoint_warn_after: datetime.timedelta | float | None = 600.0,
        ttl_seconds_after_finished: int | None = None,
        priority_class_name: str | None = None,
        queue_name: str | None = None,
        queue_timeout: datetime.timedelta | float | None = None,
        queue_timeout_until: QueueUntil = "running",
        capacity: str | list[str] | tuple[str, ...] = "on-demand",
        capacity_wait: datetime.timedelta | float | None = None,
        compute_class: str | None = None,
        reservation_project: str | None = None,
        placement: str | None = None,
        pod_template_override: Mapping[str, Any] | None = None,
        image_pull_policy: PullPolicy | None = None,
        coordinator_port: int | None = None,
        host_network: bool | None = None,
        gpu_networking: GpuNetworking = "auto",
        gpu_networks: list[str] | tuple[str, ...] = (),
        secrets: Sequence[SecretRef | Secret] = (),
        security_context: Mapping[str, Any] | None = None,
        backend: BackendName | None = None,
        kubernetes_conn_id: str | None = "kubernetes_default",
        deferrable: bool | None = None,
        on_finish_action: OnFinishAction = "delete_jobset",
        poll_interval: float = 10.0,
        stream_logs: StreamLogs = "leader",
        project_id: str | None = None,
        location: str | None = None,
        cluster_name: str | None = None,
        gcp_conn_id: str = "google_cloud_default",
        impersonation_chain: str | list[str] | tuple[str, ...] | None = None,
        **kwargs: Unpack[AirflowArguments],
    ) -> None:
        self._start(
            JobArguments(
                accelerator=accelerator,
                gpus_per_node=gpus_per_node,
                num_nodes=num_nodes,
                image=image,
                command=command,
                entrypoint=entrypoint,
                entrypoint_kwargs=entrypoint_kwargs,
                argv=argv,
                env=env,
                output_dir=output_dir,
                checkpoint_asset=checkpoint_asset,
                initialize_distributed=initialize_distributed,
                require_distributed=require_distributed,
                pip_packages=pip_packages,
                python=python,
                name=name,
                namespace=namespace,
                labels=labels,
                annotations=annotations,
                container_resources=container_resources,
                service_account_name=service_account_name,
                node_selector=node_selector,
                tolerations=tolerations,
                volumes=volumes,
                volume_mounts=volume_mounts,
                storage=storage,
                max_restarts=max_restarts,
                restart_on_exit_codes=restart_on_exit_codes,
                restart_strategy=restart_strategy,
                local_checkpoint_size=local_checkpoint_size,
                termination_grace_period=termination_grace_period,
                retry_on_code_error=retry_on_code_error,
                progress_timeout=progress_timeout,
                total_steps=total_steps,
                deadline=deadline,
                profile_steps=profile_steps,
                debug_dump=debug_dump,
                jax_config=jax_config,
                checkpoint_warn_after=checkpoint_warn_after,
                ttl_seconds_after_finished=ttl_seconds_after_finished,
                priority_class_name=priority_class_name,
                queue_name=queue_name,
                queue_timeout=queue_timeout,
                queue_timeout_until=queue_timeout_until,
                capacity=capacity,
                capacity_wait=capacity_wait,
                compute_class=compute_class,
                reservation_project=reservation_project,
                placement=placement,
                pod_template_override=pod_template_override,
                image_pull_policy=image_pull_policy,
                coordinator_port=coordinator_port,
                host_network=host_network,
                gpu_networking=gpu_networking,
                gpu_networks=gpu_networks,
                secrets=secrets,
                security_context=security_context,
                backend=backend,
                kubernetes_conn_id=kubernetes_conn_id,
                deferrable=deferrable,
                on_finish_action=on_finish_action,
                poll_interval=poll_interval,
                stream_logs=stream_logs,
                project_id=project_id,
                location=location,
                cluster_name=cluster_name,
                gcp_conn_id=gcp_conn_id,
                impersonation_chain=impersonation_chain,
            ),
            kwargs,
        )
