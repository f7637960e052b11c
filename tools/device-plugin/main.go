// A device plugin for the test cluster's real nodes: it advertises an accelerator resource
// (google.com/tpu, nvidia.com/gpu) to its node's kubelet through the kubelet's device plugin
// API (v1beta1), as GKE's TPU and GPU device plugins do, so the kubelet's device manager
// puts it in the Node's capacity and admits and allocates pods against it.
//
// The node has no such chips: each allocated "chip" is a JAX CPU device. Allocate gives the
// container JAX_PLATFORMS=cpu and XLA_FLAGS=--xla_force_host_platform_device_count=<chips
// allocated>, so JAX in the pod sees as many devices as the pod asked for chips.
//
//	device-plugin --resource google.com/tpu --count 4 [--dir /var/lib/kubelet/device-plugins]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource string
	devices  []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once, all healthy, and holds the stream open: they never change.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// Allocate gives each container as many JAX CPU devices as it was allocated chips.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, container := range req.ContainerRequests {
		ids := container.DevicesIds
		envs := map[string]string{
			"JAX_PLATFORMS": "cpu",
			"XLA_FLAGS":     fmt.Sprintf("--xla_force_host_platform_device_count=%d", len(ids)),
		}
		if p.resource == "nvidia.com/gpu" {
			envs["NVIDIA_VISIBLE_DEVICES"] = strings.Join(ids, ",") // as NVIDIA's plugin sets it
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{Envs: envs})
	}
	return out, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// register tells the kubelet where this plugin serves.
func register(dir, endpoint, resource string) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
	})
	return err
}

func main() {
	resource := flag.String("resource", "", "the extended resource, e.g. google.com/tpu")
	count := flag.Int("count", 0, "how many devices the node has")
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device plugin folder")
	flag.Parse()
	if *resource == "" || *count <= 0 {
		log.Fatal("--resource and a positive --count are required")
	}
	p := &plugin{resource: *resource}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprint(i), Health: pluginapi.Healthy})
	}
	endpoint := strings.NewReplacer("/", "-", ".", "-").Replace(*resource) + ".sock"
	socket := filepath.Join(*dir, endpoint)
	for {
		// The kubelet removes every socket in its folder when it starts (after ours, or
		// again after a restart): serve anew and register again whenever ours is gone.
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			log.Fatal(err)
		}
		_ = os.Remove(socket)
		listener, err := net.Listen("unix", socket)
		if err != nil {
			log.Fatal(err)
		}
		listener.(*net.UnixListener).SetUnlinkOnClose(false) // never unlink a newer socket
		server := grpc.NewServer()
		pluginapi.RegisterDevicePluginServer(server, p)
		go server.Serve(listener)
		registered := false
		for {
			if _, err := os.Stat(socket); err != nil {
				break
			}
			if !registered {
				if err := register(*dir, endpoint, *resource); err == nil {
					registered = true
					log.Printf("registered %s with the kubelet", *resource)
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
		log.Printf("socket %s is gone (the kubelet started or restarted): serving again", socket)
		server.Stop()
	}
}
