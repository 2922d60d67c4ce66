package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.5, 7 * time.Millisecond},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.99, 4 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{ms(1, 2, 3), 1, 3 * time.Millisecond},
	}
	for _, c := range cases {
		in := append([]time.Duration(nil), c.in...)
		if got := Percentile(c.in, c.q); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", in, c.q, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Percentile modified its input")
			}
		}
	}
}

func TestMedianRatio(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if Ratio(1, 0) != 0 || Ratio(3, 2) != 1.5 {
		t.Errorf("Ratio wrong")
	}
}

func TestParseCounters(t *testing.T) {
	m := map[string]string{"zk_packets_received": "120", "zk_packets_sent": "130", "zk_response_bytes": "4096", "zk_watch_count": "7", "zk_bytes_received_count": "999"}
	c, err := parseCounters(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.PacketsReceived != 120 || c.PacketsSent != 130 || c.ResponseBytes != 4096 || c.Watches != 7 || c.BytesReceived != 999 {
		t.Errorf("parseCounters = %+v", c)
	}
	d := Counters{PacketsReceived: 150, ResponseBytes: 5000, BytesReceived: 1999}.Sub(c)
	if d.PacketsReceived != 30 || d.ResponseBytes != 904 || d.BytesReceived != 1000 {
		t.Errorf("Sub = %+v", d)
	}
	if _, err := parseCounters(map[string]string{"zk_packets_received": "x"}); err == nil {
		t.Error("want an error for a missing or malformed counter")
	}
}
