//! Static, compile-time-checked descriptions of D-Bus interfaces and their properties, with
//! NetworkManager's whole API declared.
