package testredis

import (
	"fmt"
	"net"
)

// clusterBusOffset is the distance between a cluster node's client port and
// its cluster bus port.
const clusterBusOffset = 10000

// maxClusterPort keeps port+clusterBusOffset inside the valid port range.
const maxClusterPort = 55000

// listenLoopback opens a TCP listener on 127.0.0.1:port (0 = any free port).
func listenLoopback(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	return l, nil
}

// freePorts returns n distinct free loopback ports. With cluster set, every
// port is below maxClusterPort and its bus port (port+10000) is free too.
// All probe listeners stay open until every port is chosen, so the ports are
// distinct; they are closed before returning.
func freePorts(n int, cluster bool) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 200 {
			return nil, fmt.Errorf("no free loopback port found after %d attempts", attempts)
		}
		l, err := listenLoopback(0)
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if cluster {
			if port >= maxClusterPort {
				continue
			}
			bus, err := listenLoopback(port + clusterBusOffset)
			if err != nil {
				continue // bus port taken: try another port
			}
			held = append(held, bus)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
