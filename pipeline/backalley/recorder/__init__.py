"""Recording games watched on a bab-online server: a Socket.IO spectator, its transcripts, its records (docs/recording.md)."""
