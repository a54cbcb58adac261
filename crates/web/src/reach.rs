//! Who else can reach the server: nobody while it listens on a loopback address; otherwise the
//! URLs other machines can use, which `kimi-rs web` prints with its warning.

use std::net::{IpAddr, SocketAddr};

/// Whether other machines can connect: any address but a loopback one (`0.0.0.0` and `::` listen
/// on every interface).
pub fn exposed(addr: SocketAddr) -> bool {
    !addr.ip().is_loopback()
}

/// The addresses of this machine's network interfaces (loopback included).
pub fn interface_ips() -> std::io::Result<Vec<IpAddr>> {
    Ok(if_addrs::get_if_addrs()?
        .iter()
        .map(if_addrs::Interface::ip)
        .collect())
}

/// The URLs other machines can open for a server bound to `addr`, given this machine's
/// interface addresses: the address itself when it is a specific one, every non-loopback
/// interface address of its family for `0.0.0.0`, and of both families for `::` (an IPv6
/// socket on `::` takes IPv4 connections too unless the system is set to IPv6-only). IPv6
/// link-local addresses are left out: a browser cannot use them without a zone.
pub fn remote_urls(addr: SocketAddr, interfaces: &[IpAddr]) -> Vec<String> {
    let candidates: Vec<IpAddr> = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            interfaces.iter().copied().filter(IpAddr::is_ipv4).collect()
        }
        IpAddr::V6(ip) if ip.is_unspecified() => interfaces.to_vec(),
        ip => vec![ip],
    };
    let mut urls: Vec<String> = Vec::new();
    for ip in candidates {
        let link_local = matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80);
        let url = format!("http://{}/", SocketAddr::new(ip, addr.port()));
        if !ip.is_loopback() && !link_local && !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|ip| ip.parse().unwrap()).collect()
    }

    #[test]
    fn loopback_binds_are_private_and_the_rest_list_the_interfaces() {
        let interfaces = ips(&[
            "127.0.0.1",
            "192.168.1.20",
            "10.0.0.7",
            "::1",
            "fe80::1",
            "2001:db8::5",
            "192.168.1.20",
        ]);
        let at = |addr: &str| remote_urls(addr.parse().unwrap(), &interfaces);
        assert!(!exposed("127.0.0.1:58627".parse().unwrap()));
        assert!(!exposed("[::1]:58627".parse().unwrap()));
        assert!(exposed("0.0.0.0:58627".parse().unwrap()));
        assert!(exposed("[::]:58627".parse().unwrap()));
        assert!(exposed("192.168.1.20:58627".parse().unwrap()));
        assert_eq!(
            at("0.0.0.0:58627"),
            ["http://192.168.1.20:58627/", "http://10.0.0.7:58627/"]
        );
        assert_eq!(
            at("[::]:80"),
            [
                "http://192.168.1.20:80/",
                "http://10.0.0.7:80/",
                "http://[2001:db8::5]:80/"
            ]
        );
        assert_eq!(at("10.0.0.7:1"), ["http://10.0.0.7:1/"]);
        assert_eq!(at("127.0.0.1:1"), Vec::<String>::new());
    }
}
