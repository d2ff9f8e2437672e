package inspect

import (
	"testing"

	"github.com/voltro/voltro/internal/inspectclient"
)

// Without a token: IP addresses, localhost and .localhost names, the
// listen host and the trusted names; nothing else, however it is spelled.
func TestHostCheck(t *testing.T) {
	trust, err := inspectclient.ParseTrust("ops.internal, *.svc.example, 10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	c := HostCheck{Trust: trust, Listen: "dash.example:8780"}
	for host, want := range map[string]bool{
		"127.0.0.1:9464": true, "[::1]:9464": true, "10.1.2.3": true, "192.0.2.7:80": true, "": true,
		"localhost": true, "LOCALHOST.:9464": true, "app.localhost:9464": true,
		"dash.example:9999": true, "ops.internal": true, "a.svc.example:1": true,
		"evil.example": false, "evil.example:9464": false, "localhost.evil.example": false,
		"127.0.0.1.nip.io": false, "svc.example": false, "ops.internal.evil": false, "[fe80::1%eth0]:1": true,
	} {
		if got := c.Allows(host); got != want {
			t.Errorf("Host %q: %v, want %v", host, got, want)
		}
	}
	c.Token = "t"
	if !c.Allows("evil.example") {
		t.Error("with a token, every Host is answered")
	}
}
